"""`errors.tolerance=all` with a dead letter queue, on one real worker, Apache Kafka and
real Spark: a poison-pill topic of 10,000 records, 10 of them bad (malformed JSON, and
values `transform.sql` cannot cast), lands as 9,990 rows once and 10 dead letter records
once with their original bytes, headers and Connect's context headers, the task RUNNING
throughout and restarted twice mid-way; the per-batch error files and `/metrics` count 10. Also: the
dead letter queue's own duplicate check, without Spark; `errors.tolerance=none` failing
the task on a `transform.sql` error, naming the record; and the 400s of the error handling keys."""

from __future__ import annotations

import json
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
from worker.kafka.client import Outgoing, Record
from worker.kafka.connection import KafkaConnection
from worker.plugins.api import TaskContext
from worker.records.errors.dead_letter_queue import DeadLetterQueue
from worker.records.errors.failed_records import FailedRecord
from worker.records.errors.settings import ErrorHandlingSettings
from worker.records.errors.task_errors import batches_with_errors, read_batch_errors

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

RECORDS = 10_000
CHUNKS = 4
MALFORMED = frozenset({17, 2_600, 5_001, 7_777, 9_998})
"""Records whose value is not JSON: the converter fails them."""
UNCASTABLE = frozenset({3, 1_234, 4_999, 6_500, 9_999})
"""Records whose `n` is not a number: `transform.sql`'s CAST fails them (ANSI mode)."""
BAD = MALFORMED | UNCASTABLE
JSON_CONVERTER = b"org.apache.kafka.connect.json.JsonConverter"
RECORD_ERRORS = "kafka_connect_task_error_total_record_errors"
TRANSFORM = "SELECT value.id AS id, CAST(value.n AS INT) AS n FROM source"


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """One worker for every test here (each start costs a Spark start)."""
    root = tmp_path_factory.mktemp("dead-letter-queue")
    with ready_worker("dlq", broker.bootstrap_servers, root) as started:
        yield started


def record(n: int) -> Outgoing:
    value = (
        b'{"id": 1, "n": '
        if n in MALFORMED
        else json.dumps({"id": n, "n": "x" if n in UNCASTABLE else str(n)}).encode()
    )
    return Outgoing(f"key-{n}".encode(), value, (("trace", f"t-{n}".encode()),))


def written(output: Path) -> list[dict[str, Any]]:
    return [
        row
        for path in committed_files(output / "task-0")
        for row in pq.read_table(path).to_pylist()
    ]


def sink_config(broker: EmbeddedBroker, topic: str, output: Path, dlq: str) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(output),
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "value.schema": "id LONG, n STRING",
        "transform.sql": TRANSFORM,
        "trigger.interval.ms": "500",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
        "errors.log.enable": "true",
    }


def test_poison_pills_go_to_the_dead_letter_queue_once_and_the_rest_to_files_once(
    tansu_broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """On the default broker (Tansu, no transactions): the dead letter queue publishes
    through the duplicate check alone. (Its Kafka runs: kafka-to-jdbc's DLQ test, and
    test_secured_kafka's over SASL_SSL.) Read by the Python Kafka source: Spark's JVM
    source takes Tansu's ListOffsets answer, short of a partition's end."""
    broker = tansu_broker
    topic = new_topic(broker.bootstrap_servers, "pills", 2)
    dlq = f"pills-dlq-{free_port()}"
    output = tmp_path / "out"
    api = Api(worker.url, timeout_s=240)
    states: list[str] = []

    def running_rows() -> list[dict[str, Any]]:
        status = api.status("pills")
        states.extend(t["state"] for t in status["tasks"])
        return written(output)

    chunk = RECORDS // CHUNKS
    produce(broker.bootstrap_servers, topic, [record(n) for n in range(chunk)])
    config = {**sink_config(broker, topic, output, dlq), "kafka.client": "python"}
    api.call("PUT", "/connectors/pills/config", 201, json=config)
    for index in range(1, CHUNKS):
        wait_until(running_rows, 240, what="rows of the last chunk", until=bool)
        produce(
            broker.bootstrap_servers,
            topic,
            [record(n) for n in range(index * chunk, (index + 1) * chunk)],
        )
        if index < CHUNKS - 1:
            # A restart while batches run: one may stop between its dead letter queue
            # publish and its files' commit, and run again.
            api.call("POST", "/connectors/pills/tasks/0/restart", 204)
    rows = wait_until(
        running_rows, 240, what="every good row", until=lambda r: len(r) >= RECORDS - len(BAD)
    )
    letters = wait_until(
        lambda: read_topic(broker.bootstrap_servers, dlq, "read_committed"),
        120,
        what="every dead letter",
        until=lambda found: len(found) >= len(BAD),
    )
    checkpoint = worker.checkpoint_root / "pills" / "task-0"
    counts = [read_batch_errors(checkpoint, b) for b in batches_with_errors(checkpoint)]
    record_errors = wait_until(
        lambda: _metric(api.call("GET", "/metrics", 200).text, RECORD_ERRORS, "pills"),
        120,
        what=f"{RECORD_ERRORS} to count every bad record",
        until=lambda value: value >= len(BAD),
    )
    api.wait_states("pills", "RUNNING", ["RUNNING"])
    api.call("DELETE", "/connectors/pills", 204)

    # Never FAILED: UNASSIGNED before the first start, RESTARTING during the restarts.
    assert "FAILED" not in states, states
    assert sorted(r["id"] for r in rows) == sorted(set(range(RECORDS)) - BAD)
    assert all(r["n"] == r["id"] for r in rows)
    assert sorted(_number(letter) for letter in letters) == sorted(BAD)
    for letter in letters:
        assert_dead_letter(letter, topic, "pills")
    assert sum(c.record_errors for c in counts) == len(BAD)
    assert sum(c.records_skipped for c in counts) == len(BAD)
    assert sum(c.deadletterqueue_produce_requests for c in counts) == len(BAD)
    assert record_errors == len(BAD)


def _number(letter: Record) -> int:
    assert letter.key is not None
    return int(letter.key.decode().removeprefix("key-"))


def assert_dead_letter(letter: Record, topic: str, connector: str) -> None:
    n = _number(letter)
    original = record(n)
    headers = dict(letter.headers)
    assert letter.value == original.value
    assert letter.headers[0] == ("trace", f"t-{n}".encode())
    assert headers["__connect.errors.topic"] == topic.encode()
    assert headers["__connect.errors.offset"].isdigit()
    assert headers["__connect.errors.partition"] in (b"0", b"1")
    assert headers["__connect.errors.connector.name"] == connector.encode()
    assert headers["__connect.errors.task.id"] == b"0"
    if n in MALFORMED:
        assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
        assert (
            headers["__connect.errors.class.name"] == b"org.apache.kafka.connect.json.JsonConverter"
        )
    else:
        assert headers["__connect.errors.stage"] == b"TRANSFORMATION"
        assert headers["__connect.errors.class.name"] == b"transform.sql"
        assert b"CAST_INVALID_INPUT" in headers["__connect.errors.exception.message"]
        assert headers["__connect.errors.exception.stacktrace"]
    assert headers["__connect.errors.exception.class.name"]


def _metric(text: str, name: str, connector: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and f'connector="{connector}"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise KeyError(f"no {name} for {connector}")


def test_the_dead_letter_queue_publishes_a_batch_once_however_often_it_runs(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """Without Spark: the same batch published twice, and again by a new start of the
    task (which fences the first start's producer), lands once; the topic is created."""
    topic = f"once-dlq-{free_port()}"
    settings = ErrorHandlingSettings.model_validate(
        {
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": topic,
            "errors.deadletterqueue.topic.replication.factor": "-1",
        }
    )
    context = TaskContext("once", 0, {}, {}, tmp_path / "task-0")
    connection = KafkaConnection(broker.bootstrap_servers)
    failed = [
        FailedRecord("t", 0, n, b"k", bytes([n]), (), "TRANSFORMATION", "transform.sql", "E", "m")
        for n in range(3)
    ]
    first = DeadLetterQueue.open(connection, settings, context)
    assert first is not None
    first.publish(7, failed)
    first.publish(7, failed)
    second = DeadLetterQueue.open(connection, settings, context)
    assert second is not None
    second.publish(7, failed)
    second.publish(8, [FailedRecord("t", 0, 9, b"k", None, (), "TRANSFORMATION", "x", "E", "m")])

    letters = read_topic(broker.bootstrap_servers, topic, "read_committed")
    assert [r.value for r in letters] == [bytes([0]), bytes([1]), bytes([2]), None]


def test_tolerance_none_fails_the_task_naming_the_record_transform_sql_failed_on(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "strict", 1)
    produce(broker.bootstrap_servers, topic, [record(n) for n in range(5)])
    config = {
        **sink_config(broker, topic, tmp_path / "out", "unused-dlq"),
        "errors.tolerance": "none",
    }
    api = Api(worker.url, timeout_s=180)
    api.call("PUT", "/connectors/strict/config", 201, json=config)
    status = api.wait_states("strict", "RUNNING", ["FAILED"])
    api.call("DELETE", "/connectors/strict", 204)
    trace = status["tasks"][0]["trace"]
    assert f"the record at topic {topic}, partition 0, offset 3 " in trace
    assert "CAST_INVALID_INPUT" in trace


def test_tolerance_all_refuses_what_a_streaming_query_refuses(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """`transform.sql` runs per batch with `errors.tolerance=all`, yet a query a
    streaming query could not run (an aggregation without a watermark) fails the task
    as it does without tolerance, rather than counting per batch."""
    topic = new_topic(broker.bootstrap_servers, "counting", 1)
    config = {
        **sink_config(broker, topic, tmp_path / "out", f"counting-dlq-{free_port()}"),
        "transform.sql": "SELECT count(*) AS n FROM source",
    }
    api = Api(worker.url, timeout_s=180)
    api.call("PUT", "/connectors/counting/config", 201, json=config)
    status = api.wait_states("counting", "RUNNING", ["FAILED"])
    api.call("DELETE", "/connectors/counting", 204)
    assert "streaming aggregations" in status["tasks"][0]["trace"]


def test_error_handling_keys_are_checked_before_a_config_is_stored(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    good = sink_config(broker, "orders", tmp_path / "out", "orders-dlq")
    files = {
        "connector.class": "files-to-kafka",
        "input.path": str(tmp_path),
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topic": "orders",
    }
    generator = {"connector.class": "generator", "output.path": str(tmp_path / "gen")}
    refused = {
        "errors.deadletterqueue.topic.name": {
            **good,
            "errors.deadletterqueue.topic.name": "orders",
        },
        "errors.deadletterqueue.topic.name ": {
            **good,
            "errors.deadletterqueue.topic.name": "no spaces",
        },
        "errors.tolerance": {**good, "errors.tolerance": "some"},
        "errors.retry.timeout": {**good, "errors.retry.timeout": "-1"},
        "errors.retry.delay.max.ms": {**good, "errors.retry.delay.max.ms": "-5"},
        "errors.deadletterqueue.topic.replication.factor": {
            **good,
            "errors.deadletterqueue.topic.replication.factor": "0",
        },
        "errors.deadletterqueue.topic": {**good, "errors.deadletterqueue.topic": "typo"},
        "files:errors.deadletterqueue.topic.name": {
            **files,
            "errors.deadletterqueue.topic.name": "dlq",
        },
        "generator:errors.deadletterqueue.context.headers.enable": {
            **generator,
            "errors.deadletterqueue.context.headers.enable": "true",
        },
        "generator:errors.tolerance": {**generator, "errors.tolerance": "all"},
    }
    api = Api(worker.url)
    for name, bad in refused.items():
        key = name.split(":")[-1].strip()
        answer = api.call("PUT", "/connectors/bad/config", 400, json=bad)
        assert answer.json()["message"].count(f"{key}:") == 1, (name, answer.text)
    validated = api.call(
        "PUT", "/connector-plugins/kafka-to-files/config/validate", 200, json=good
    ).json()
    assert validated["error_count"] == 0, validated


def test_the_python_kafka_source_hands_on_headers_as_the_jvm_source_does(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """`kafka.client=python` (the `sparkherd-kafka` source): the dead letter record
    carries the original headers too."""
    topic = new_topic(broker.bootstrap_servers, "pyheaders", 1)
    dlq = f"pyheaders-dlq-{free_port()}"
    produce(broker.bootstrap_servers, topic, [record(n) for n in (16, 17, 18)])
    config = {
        **sink_config(broker, topic, tmp_path / "out", dlq),
        "kafka.client": "python",
    }
    api = Api(worker.url, timeout_s=180)
    api.call("PUT", "/connectors/pyheaders/config", 201, json=config)
    # Rows are committed after their batch's dead letters, in a topic the task created.
    rows = wait_until(lambda: written(tmp_path / "out"), 180, what="rows", until=bool)
    letters = read_topic(broker.bootstrap_servers, dlq, "read_committed")
    api.call("DELETE", "/connectors/pyheaders", 204)
    assert [_number(letter) for letter in letters] == [17]
    assert_dead_letter(letters[0], topic, "pyheaders")
    assert sorted(r["id"] for r in rows) == [16, 18]
