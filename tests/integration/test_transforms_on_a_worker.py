"""Connect's transforms on one real worker, a real broker and real Spark: a
`kafka-to-files` connector with `MaskField$Value` writes the field masked (the leak of
issue 43: the chain used to be accepted and ignored), a `Filter` with a predicate drops
what it matches, a record a transform cannot handle fails the task naming the record and
the alias (`errors.tolerance=none`) or goes to the dead letter queue with stage
TRANSFORMATION (`all`), a `RegexRouter` on `files-to-kafka` routes the records, the
chain of Kafka's own documentation runs as copied, and a bad chain is a 400 naming the
alias and the key."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.file_sink import committed_files
from tests.support.kafka_topics import new_topic, produce, read_topic
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port, ready_worker
from tests.support.rest_client import Api
from worker.kafka.client import Outgoing

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

T = "org.apache.kafka.connect.transforms."


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("transforms")
    with ready_worker("transforms", broker.bootstrap_servers, root) as started:
        yield started


def orders(count: int) -> list[Outgoing]:
    return [
        Outgoing(
            f"k{n}".encode(),
            json.dumps({"id": n, "item": f"secret-{n}", "qty": str(n) if n != 3 else "x"}).encode(),
            (("skip", b"yes"),) if n % 4 == 1 else (),
        )
        for n in range(count)
    ]


def to_files(broker: EmbeddedBroker, topic: str, output: Path, **chain: str) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(output),
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "value.schema": "id LONG, item STRING, qty STRING",
        "transform.sql": "SELECT value.id, value.item, value.qty, topic FROM source",
        "trigger.interval.ms": "500",
        **{key.replace("__", "."): value for key, value in chain.items()},
    }


def written(output: Path) -> list[dict[str, Any]]:
    return [
        row
        for path in committed_files(output / "task-0")
        for row in pq.read_table(path).to_pylist()
    ]


def test_mask_field_masks_the_field_in_what_kafka_to_files_writes(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "leak", 1)
    produce(broker.bootstrap_servers, topic, orders(8))
    config = to_files(
        broker,
        topic,
        tmp_path / "out",
        transforms="mask",
        transforms__mask__type=f"{T}MaskField$Value",
        transforms__mask__fields="item",
    )
    api = Api(worker.url, timeout_s=240)
    api.call("PUT", "/connectors/leak/config", 201, json=config)
    rows = wait_until(
        lambda: written(tmp_path / "out"), 240, what="8 rows", until=lambda r: len(r) >= 8
    )
    api.call("DELETE", "/connectors/leak", 204)
    assert sorted(r["id"] for r in rows) == list(range(8))
    assert {r["item"] for r in rows} == {""}


def test_the_chain_of_kafkas_own_documentation_runs_unchanged(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """Apache Kafka's Connect documentation ("Transformations") wraps each line of a
    file in a struct and stamps its source with these very keys; copied as they are,
    lines read with the string converter come out as that struct."""
    topic = new_topic(broker.bootstrap_servers, "docs-chain", 1)
    lines = ["foo", "bar", "hello world"]
    produce(broker.bootstrap_servers, topic, [Outgoing(None, line.encode()) for line in lines])
    from_kafkas_docs = {
        "transforms": "MakeMap, InsertSource",
        "transforms.MakeMap.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.MakeMap.field": "line",
        "transforms.InsertSource.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.InsertSource.static.field": "data_source",
        "transforms.InsertSource.static.value": "test-file-source",
    }
    config = {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(tmp_path / "out"),
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "transform.sql": "SELECT value.* FROM source",
        **from_kafkas_docs,
    }
    api = Api(worker.url, timeout_s=240)
    api.call("PUT", "/connectors/docs-chain/config", 201, json=config)
    rows = wait_until(
        lambda: written(tmp_path / "out"), 240, what="3 rows", until=lambda r: len(r) >= 3
    )
    api.call("DELETE", "/connectors/docs-chain", 204)
    assert sorted(rows, key=lambda r: str(r["line"])) == [
        {"line": line, "data_source": "test-file-source"} for line in sorted(lines)
    ]


def test_a_filter_with_a_predicate_drops_what_it_matches_and_routes_the_rest(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "filtered", 1)
    produce(broker.bootstrap_servers, topic, orders(8))
    config = to_files(
        broker,
        topic,
        tmp_path / "out",
        transforms="skip,route",
        transforms__skip__type=f"{T}Filter",
        transforms__skip__predicate="skipped",
        transforms__route__type=f"{T}RegexRouter",
        transforms__route__regex="filtered-(.*)",
        transforms__route__replacement="table_$1",
        predicates="skipped",
        predicates__skipped__type=f"{T}predicates.HasHeaderKey",
        predicates__skipped__name="skip",
    )
    api = Api(worker.url, timeout_s=240)
    api.call("PUT", "/connectors/filtered/config", 201, json=config)
    rows = wait_until(
        lambda: written(tmp_path / "out"), 240, what="6 rows", until=lambda r: len(r) >= 6
    )
    api.call("DELETE", "/connectors/filtered", 204)
    assert sorted(r["id"] for r in rows) == [0, 2, 3, 4, 6, 7]
    assert {r["topic"] for r in rows} == {"table_" + topic.removeprefix("filtered-")}


def test_a_record_a_transform_cannot_cast_fails_the_task_naming_record_and_alias(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "uncastable", 1)
    produce(broker.bootstrap_servers, topic, orders(5))
    cast = {
        "transforms": "toint",
        "transforms__toint__type": f"{T}Cast$Value",
        "transforms__toint__spec": "qty:int32",
    }
    api = Api(worker.url, timeout_s=240)
    api.call(
        "PUT",
        "/connectors/strict/config",
        201,
        json=to_files(broker, topic, tmp_path / "a", **cast),
    )
    status = api.wait_states("strict", "RUNNING", ["FAILED"])
    api.call("DELETE", "/connectors/strict", 204)
    trace = status["tasks"][0]["trace"]
    where = f"the record at topic {topic}, partition 0, offset 3"
    assert f"transforms.toint (Cast$Value) failed on {where}" in trace

    dlq = f"uncastable-dlq-{free_port()}"
    tolerant = {
        **to_files(broker, topic, tmp_path / "b", **cast),
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    api.call("PUT", "/connectors/tolerant/config", 201, json=tolerant)
    rows = wait_until(
        lambda: written(tmp_path / "b"), 240, what="4 rows", until=lambda r: len(r) >= 4
    )
    letters = read_topic(broker.bootstrap_servers, dlq, "read_committed")
    api.call("DELETE", "/connectors/tolerant", 204)
    assert sorted(r["id"] for r in rows) == [0, 1, 2, 4]
    assert {r["qty"] for r in rows} == {0, 1, 2, 4}
    [letter] = letters
    headers = dict(letter.headers)
    assert letter.key == b"k3"
    assert headers["__connect.errors.stage"] == b"TRANSFORMATION"
    assert headers["__connect.errors.class.name"] == f"{T}Cast$Value".encode()
    assert headers["__connect.errors.topic"] == topic.encode()
    assert headers["__connect.errors.offset"] == b"3"


def test_regex_router_routes_what_files_to_kafka_publishes(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (tmp_path / "draft").write_text("\n".join(json.dumps({"id": n}) for n in range(5)) + "\n")
    os.replace(tmp_path / "draft", incoming / "rows.json")
    topic = f"raw-{free_port()}"
    routed = new_topic(broker.bootstrap_servers, "clean", 1)
    config = {
        "connector.class": "files-to-kafka",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "input.path": str(incoming),
        "input.schema": "id LONG",
        "topic": topic,
        "key.converter": "json",
        "key.converter.schemas.enable": "false",
        "transforms": "route,key",
        "transforms.route.type": f"{T}RegexRouter",
        "transforms.route.regex": "raw-.*",
        "transforms.route.replacement": routed,
        "transforms.key.type": f"{T}ValueToKey",
        "transforms.key.fields": "id",
    }
    api = Api(worker.url, timeout_s=240)
    api.call("PUT", "/connectors/routing/config", 201, json=config)
    _, published = wait_until(
        lambda: (
            api.status("routing"),
            read_topic(broker.bootstrap_servers, routed, "read_committed"),
        ),
        240,
        what="5 routed records (and the status)",
        until=lambda found: len(found[1]) >= 5,
    )
    api.call("DELETE", "/connectors/routing", 204)
    assert sorted(json.loads(r.value or b"")["id"] for r in published) == list(range(5))
    assert sorted(json.loads(r.key or b"")["id"] for r in published) == list(range(5))


def test_a_bad_chain_is_a_400_naming_the_alias_and_key(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    good = to_files(broker, "orders", tmp_path / "out")
    mask = {"transforms": "m", "transforms.m.type": f"{T}MaskField$Value"}
    refused: list[tuple[str, str, dict[str, str]]] = [
        (
            "transforms.x.type",
            "not a transformation",
            {"transforms": "x", "transforms.x.type": "Mine"},
        ),
        ("transforms.m.fields", "missing", mask),
        ("transforms.m.fields", "no field 'absent'", {**mask, "transforms.m.fields": "absent"}),
        (
            "transforms.f.predicate",
            "not a predicate alias",
            {"transforms": "f", "transforms.f.type": f"{T}Filter", "transforms.f.predicate": "p"},
        ),
        (
            "transforms.r.replacement",
            "a topic of the worker or of the broker",
            {
                "transforms": "r",
                "transforms.r.type": f"{T}RegexRouter",
                "transforms.r.regex": ".*",
                "transforms.r.replacement": "__consumer_offsets",
            },
        ),
    ]
    api = Api(worker.url)
    for key, says, chain in refused:
        message = api.call("PUT", "/connectors/bad/config", 400, json={**good, **chain}).json()
        assert f"{key}: " in message["message"] and says in message["message"], (key, message)
        validated = api.call(
            "PUT", "/connector-plugins/kafka-to-files/config/validate", 200, json={**good, **chain}
        ).json()
        assert validated["error_count"] == 1, validated
