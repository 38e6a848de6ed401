"""The worker's own topics against a real worker, a real broker and real Spark: every way a
REST caller could name one is a 400, a `topics.regex` never reads one, and a connector
record written straight onto the config topic by someone other than the leader is not
applied. Each probe worked against sparkherd once: a sink copied every stored config,
passwords included, into its files; a source forged a connector record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.file_sink import committed_records
from tests.support.kafka_topics import keyed, new_topic, produce
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, ready_worker
from worker.kafka.client import Outgoing

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


class Victim:
    """A worker, the names of its topics, and a connector holding a password."""

    def __init__(self, worker: WorkerProcess, broker: EmbeddedBroker, root: Path) -> None:
        self.worker = worker
        self.servers = broker.bootstrap_servers
        self.root = root
        group = next(s for s in worker.extra if s.startswith("group.id=")).split("=", 1)[1]
        self.config_topic = f"{group}-configs"
        self.status_topic = f"{group}-status"
        self.offsets_topic = f"{group}-offsets"

    def call(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        return httpx.request(method, f"{self.worker.url}{path}", timeout=60, **kwargs)  # type: ignore[arg-type]

    def create(self, name: str, config: dict[str, str]) -> httpx.Response:
        return self.call("PUT", f"/connectors/{name}/config", json=config)

    def files_sink(self, name: str, **settings: str) -> dict[str, str]:
        return {
            "connector.class": "kafka-to-files",
            "kafka.bootstrap.servers": self.servers,
            "output.path": str(self.root / name),
            "output.format": "parquet",
            "trigger.interval.ms": "500",
            **settings,
        }


@pytest.fixture(scope="module")
def victim(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Victim]:
    root = tmp_path_factory.mktemp("internal-topics")
    with ready_worker("victim", broker.bootstrap_servers, root) as worker:
        yield Victim(worker, broker, root)


def refused(answer: httpx.Response, key: str, topic: str) -> None:
    assert answer.status_code == 400, answer.text
    message = answer.json()["message"]
    assert f"{key}: names {topic!r}" in message, message


def test_no_sink_reads_a_topic_of_the_worker_or_of_the_broker(victim: Victim) -> None:
    for topic in (victim.config_topic, victim.status_topic, "__consumer_offsets"):
        answer = victim.create("reader", victim.files_sink("reader", topics=f"orders,{topic}"))
        refused(answer, "topics", topic)


def test_no_source_writes_one(victim: Victim) -> None:
    for topic in (victim.config_topic, victim.offsets_topic, "__transaction_state"):
        config = {
            "connector.class": "files-to-kafka",
            "kafka.bootstrap.servers": victim.servers,
            "input.path": str(victim.root / "in"),
            "input.format": "json",
            "input.schema": "id LONG",
            "topic": topic,
        }
        refused(victim.create("forger", config), "topic", topic)


def test_no_table_is_published_into_one(victim: Victim) -> None:
    group = victim.config_topic.removesuffix("configs")
    config = {
        "connector.class": "jdbc-to-kafka",
        "kafka.bootstrap.servers": victim.servers,
        "connection.url": "jdbc:postgresql://127.0.0.1:5432/shop",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "table.whitelist": "orders,status",
        "topic.prefix": group,
    }
    refused(victim.create("rows", config), "topic.prefix", victim.status_topic)


def test_no_dead_letter_queue_is_one(victim: Victim) -> None:
    config = victim.files_sink(
        "dlq",
        topics="orders",
        **{
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": victim.status_topic,
        },
    )
    refused(victim.create("dlq", config), "errors.deadletterqueue.topic.name", victim.status_topic)


def test_validate_names_the_key_too(victim: Victim) -> None:
    config = victim.files_sink("checked", topics=victim.config_topic)
    answer = victim.call("PUT", "/connector-plugins/kafka-to-files/config/validate", json=config)
    assert answer.status_code == 200, answer.text
    topics = next(c for c in answer.json()["configs"] if c["value"]["name"] == "topics")
    assert any(victim.config_topic in error for error in topics["value"]["errors"])


def test_kafka_to_jdbc_does_not_write_its_ledger(victim: Victim) -> None:
    config = {
        "connector.class": "kafka-to-jdbc",
        "kafka.bootstrap.servers": victim.servers,
        "topics": "orders",
        "connection.url": "jdbc:postgresql://127.0.0.1:5432/shop",
        "table.name.format": "sparkherd_jdbc_sink_batches",
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "value.schema": "id LONG",
    }
    answer = victim.create("ledger", config)
    assert answer.status_code == 400, answer.text
    assert "table.name.format" in answer.json()["message"]
    assert "ledger" in answer.json()["message"]


def test_a_regex_matching_the_workers_topics_reads_only_the_others(victim: Victim) -> None:
    mine = new_topic(victim.servers, "regex-orders", 2)
    produce(victim.servers, mine, keyed(range(20)))
    group = victim.config_topic.removesuffix("-configs")
    regex = f"{mine}|{group}-.*|__.*"
    answer = victim.create("regex", victim.files_sink("regex", **{"topics.regex": regex}))
    assert answer.status_code == 201, answer.text
    output = victim.root / "regex"
    rows = wait_until(
        lambda: committed_records(output),
        120,
        what="the regex connector's records",
        until=lambda found: len(found) >= 20,
    )
    assert sorted(key for key, _, _ in rows) == sorted(f"key-{n}" for n in range(20))
    tasks = victim.call("GET", "/connectors/regex/tasks").json()
    assigned = {
        part.rpartition(":")[0]
        for task in tasks
        for part in task["config"]["kafka.assign"].split(",")
    }
    assert assigned == {mine}


def test_a_connector_record_forged_on_the_config_topic_is_not_applied(victim: Victim) -> None:
    """What an attacker with write access to the topic (or a connector of an older
    version without these checks) could write: a sink of the config topic itself."""
    forged = {"name": "forged", **victim.files_sink("forged", topics=victim.config_topic)}
    value = json.dumps({"properties": forged}).encode()
    produce(victim.servers, victim.config_topic, [Outgoing(b"connector-forged", value)])
    wait_until(
        lambda: "connector-forged: " in victim.worker.log_text(),
        60,
        what="the worker to read the forged record",
    )
    assert "forged" not in victim.call("GET", "/connectors").json()
    metrics = victim.call("GET", "/metrics").text
    assert "sparkherd_config_records_refused_total 1.0" in metrics
