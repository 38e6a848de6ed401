"""KIP-995's `initial_offsets` on a real worker, a real broker, real Spark and a real
PostgreSQL: a sink reads each partition from the offset given (the others from where it
would start anyway), a source resumes after the mark given, and initial offsets that are
wrong, or a name that holds offsets already, are a 400 that creates nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from aiokafka import TopicPartition

from sparkherd.broker.embedded import EmbeddedBroker
from tests.integration.test_jdbc_to_kafka import source_config
from tests.support.file_sink import committed_records
from tests.support.kafka_topics import keyed, new_topic, produce, read_topic
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import WorkerProcess, free_port, ready_worker
from tests.support.rest_client import Api
from worker.kafka.client import BlockingKafka

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 120


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("initial-offsets")
    with ready_worker("initial-offsets", broker.bootstrap_servers, root) as process:
        yield process


def sink_config(broker: EmbeddedBroker, topic: str, output: Path) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(output),
        "trigger.interval.ms": "500",
        "kafka.client": "python",
    }


def end_offsets(broker: EmbeddedBroker, topic: str) -> dict[int, int]:
    with BlockingKafka(broker.bootstrap_servers, "test-ends") as kafka:
        partitions = [TopicPartition(topic, p) for p in kafka.partitions(topic)]
        return {tp.partition: end for tp, end in kafka.end_offsets(partitions).items()}


def kafka_partition(topic: str, partition: int, offset: int | None) -> dict[str, Any]:
    return {
        "partition": {"kafka_topic": topic, "kafka_partition": partition},
        "offset": None if offset is None else {"kafka_offset": offset},
    }


def test_a_sink_reads_each_partition_from_its_initial_offset(
    worker: WorkerProcess, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    api = Api(worker.url, TIMEOUT_S)
    topic = new_topic(broker.bootstrap_servers, "orders", 2)
    produce(broker.bootstrap_servers, topic, keyed(range(40)))
    ends = end_offsets(broker, topic)
    expected = {(p, o) for p, end in ends.items() for o in range(end) if p == 1 or o >= 5}
    output = tmp_path / "out"

    created = api.call(
        "POST",
        "/connectors",
        201,
        json={
            "name": "from-five",
            "config": sink_config(broker, topic, output),
            "initial_offsets": [kafka_partition(topic, 0, 5), kafka_partition(topic, 1, None)],
        },
    ).json()

    assert created["offsets_status"]
    rows = wait_until(
        partial(committed_records, output),
        TIMEOUT_S,
        what="the records after the initial offsets",
        until=lambda found: len(found) >= len(expected),
    )
    assert sorted((p, o) for _, p, o in rows) == sorted(expected)
    api.call("DELETE", "/connectors/from-five", 204)

    again = api.call(
        "POST",
        "/connectors",
        400,
        json={
            "name": "from-five",
            "config": sink_config(broker, topic, output),
            "initial_offsets": [kafka_partition(topic, 0, 0)],
        },
    ).json()
    assert "Connector from-five has offsets already" in again["message"]
    api.call("GET", "/connectors/from-five", 404)


def published_ids(broker: EmbeddedBroker, topic: str) -> list[int]:
    """The `id` of every row published to `topic` (its plain JSON or its envelope)."""
    try:
        records = read_topic(broker.bootstrap_servers, topic)
    except Exception:  # the task has not created its topic yet
        return []
    rows = [json.loads(r.value or b"{}") for r in records]
    return [row.get("payload", row)["id"] for row in rows]


def test_a_source_resumes_after_its_initial_mark(
    worker: WorkerProcess, postgres: PostgresServer, broker: EmbeddedBroker
) -> None:
    api = Api(worker.url, TIMEOUT_S)
    table = f"marks_{free_port()}"
    postgres.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, item text)")
    postgres.execute(f"INSERT INTO {table} SELECT g, 'item-' || g FROM generate_series(1, 10) g")
    prefix = f"initial-{free_port()}-"
    config = source_config(
        postgres,
        broker,
        prefix,
        mode="incrementing",
        incrementing_column_name="id",
        table_whitelist=table,
    )
    mark = {"partition": {"task": 0, "source": 0}, "offset": {table: {"incrementing": 6}}}
    body = {"name": table, "config": config, "initial_offsets": [mark]}

    api.call("POST", "/connectors", 201, json=body)

    ids = wait_until(
        partial(published_ids, broker, prefix + table),
        TIMEOUT_S,
        what="the rows after the mark",
        until=lambda found: len(found) >= 4,
    )
    assert sorted(ids) == [7, 8, 9, 10]
    api.call("DELETE", f"/connectors/{table}", 204)


def test_a_source_bound_to_files_refuses_initial_offsets(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    api = Api(worker.url, TIMEOUT_S)
    config = {"connector.class": "generator", "output.path": str(tmp_path / "out")}
    offsets = [{"partition": {"task": 0}, "offset": {"offset": 100, "timestamp": 0}}]
    body = {"name": "seeded-generator", "config": config, "initial_offsets": offsets}

    refused = api.call("POST", "/connectors", 400, json=body).json()

    assert "generator cannot start from offsets given at create" in refused["message"]
    api.call("GET", "/connectors/seeded-generator", 404)


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ([kafka_partition("payroll", 0, 1)], "does not read topic 'payroll'"),
        ([kafka_partition("{topic}", 0, -1)], "kafka_offset must be an integer from 0"),
        ([{"partition": {"task": 0}, "offset": {"offset": 1}}], "partition must be {"),
        ([], "initial_offsets cannot be empty"),
    ],
)
def test_wrong_initial_offsets_are_a_400_that_creates_nothing(
    worker: WorkerProcess, broker: EmbeddedBroker, tmp_path: Path, offsets: Any, message: str
) -> None:
    api = Api(worker.url, TIMEOUT_S)
    topic = new_topic(broker.bootstrap_servers, "refunds", 1)
    name = f"refused-{free_port()}"
    given = json.loads(json.dumps(offsets).replace("{topic}", topic))
    body = {"name": name, "config": sink_config(broker, topic, tmp_path), "initial_offsets": given}

    refused = api.call("POST", "/connectors", 400, json=body).json()

    assert message in refused["message"]
    api.call("GET", f"/connectors/{name}", 404)
    assert not (worker.checkpoint_root / name).exists()
