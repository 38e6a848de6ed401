"""The pure parts of error handling: the `errors.*` keys, the dead letter queue's
headers and log line, the retry backoff, and the bisection planner."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.kafka.client import KafkaUnavailableError
from worker.kafka.connection import KafkaConnection
from worker.kafka.sink import IntentLog, OutRow
from worker.plugins.api import ConnectorConfigError, TaskContext, parse_config
from worker.records.errors.bisection import OffsetRange, Part, isolate_failures, split, whole_batch
from worker.records.errors.dead_letter_queue import (
    DeadLetterQueue,
    DeadLetterQueuePublishError,
    backoff_ms,
)
from worker.records.errors.failed_records import (
    FailedRecord,
    PutFailure,
    context_headers,
    dead_letter_headers,
    log_line,
)
from worker.records.errors.settings import (
    ErrorHandlingSettings,
    error_handling_problems,
    not_reading_kafka_problems,
)
from worker.records.errors.strict_batches import RecordFailedError, StrictBatches


def settings(config: Mapping[str, str]) -> ErrorHandlingSettings:
    return parse_config(ErrorHandlingSettings, config)


def test_connects_defaults() -> None:
    defaults = settings({})
    assert defaults.errors_tolerance == "none"
    assert defaults.errors_deadletterqueue_topic_replication_factor == 3
    assert not defaults.errors_deadletterqueue_context_headers_enable
    assert not defaults.errors_log_enable and not defaults.errors_log_include_messages
    assert (defaults.errors_retry_timeout, defaults.errors_retry_delay_max_ms) == (0, 60_000)
    assert defaults.dead_letter_queue is None


def test_a_dead_letter_queue_only_with_tolerance_all() -> None:
    named = {"errors.deadletterqueue.topic.name": " dlq "}
    assert settings(named).dead_letter_queue is None
    assert settings({**named, "errors.tolerance": "ALL"}).dead_letter_queue == "dlq"
    assert settings({"errors.tolerance": "all"}).dead_letter_queue is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("errors.tolerance", "some"),
        ("errors.retry.timeout", "-1"),
        ("errors.retry.delay.max.ms", "-1"),
        ("errors.deadletterqueue.topic.replication.factor", "0"),
        ("errors.deadletterqueue.topic.replication.factor", "40000"),
        ("errors.log.enable", "maybe"),
    ],
)
def test_bad_values_name_their_key(key: str, value: str) -> None:
    with pytest.raises(ConnectorConfigError) as refused:
        settings({key: value})
    assert [p.key for p in refused.value.problems] == [key]


def test_broker_default_replication_factor() -> None:
    key = "errors.deadletterqueue.topic.replication.factor"
    assert settings({key: "-1"}).errors_deadletterqueue_topic_replication_factor == -1


def test_cross_key_problems() -> None:
    problems = error_handling_problems(
        {
            "errors.deadletterqueue.topic.name": "orders",
            "errors.deadletterqueue.topic": "typo",
            "errors.tolerance": "all",
        },
        ["orders", "payments"],
    )
    assert [p.key for p in problems] == [
        "errors.deadletterqueue.topic",
        "errors.deadletterqueue.topic.name",
    ]
    bad_name = error_handling_problems({"errors.deadletterqueue.topic.name": "a/b"}, ["x"])
    assert "not a Kafka topic name" in bad_name[0].message
    assert error_handling_problems({"errors.deadletterqueue.topic.name": "dlq"}, ["x"]) == []


def test_connectors_reading_no_kafka_refuse_dead_letter_keys() -> None:
    config = {
        "errors.deadletterqueue.topic.name": "dlq",
        "errors.tolerance": "all",
        "errors.log.enable": "true",
    }
    problems = not_reading_kafka_problems(config, "generator")
    assert [p.key for p in problems] == ["errors.deadletterqueue.topic.name", "errors.tolerance"]
    assert not_reading_kafka_problems({"errors.tolerance": "none"}, "generator") == []


FAILED = FailedRecord(
    topic="orders",
    partition=2,
    offset=17,
    key=b"k",
    value=b"{bad",
    headers=(("trace", b"t-1"),),
    stage="VALUE_CONVERTER",
    class_name="org.apache.kafka.connect.json.JsonConverter",
    exception_class="org.apache.kafka.connect.errors.DataException",
    message="Cannot convert",
)


def test_connects_context_headers_after_the_records_own() -> None:
    headers = dead_letter_headers(FAILED, "orders-sink", 3, context=True)
    assert headers[0] == ("trace", b"t-1")
    assert dict(headers[1:]) == {
        "__connect.errors.topic": b"orders",
        "__connect.errors.partition": b"2",
        "__connect.errors.offset": b"17",
        "__connect.errors.connector.name": b"orders-sink",
        "__connect.errors.task.id": b"3",
        "__connect.errors.stage": b"VALUE_CONVERTER",
        "__connect.errors.class.name": b"org.apache.kafka.connect.json.JsonConverter",
        "__connect.errors.exception.class.name": b"org.apache.kafka.connect.errors.DataException",
        "__connect.errors.exception.message": b"Cannot convert",
    }
    assert dead_letter_headers(FAILED, "orders-sink", 3, context=False) == FAILED.headers
    with_trace = FailedRecord(**{**FAILED.__dict__, "stacktrace": "at x"})
    assert context_headers(with_trace, "c", 0)[-1] == (
        "__connect.errors.exception.stacktrace",
        b"at x",
    )


def test_log_lines_hold_record_content_only_when_asked() -> None:
    assert "{bad" not in log_line(FAILED, "c", 0, include_messages=False)
    assert "offset 17" in log_line(FAILED, "c", 0, include_messages=False)
    assert "{bad" in log_line(FAILED, "c", 0, include_messages=True)


def test_backoff_doubles_up_to_the_maximum() -> None:
    assert [backoff_ms(a, 2_000) for a in range(1, 6)] == [300, 600, 1200, 2000, 2000]
    assert backoff_ms(100, 60_000) == 60_000


def test_split_halves_ranges_then_offsets() -> None:
    a, b = OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 5, 6)
    assert split((a, b)) == ((a,), (b,))
    assert split((a,)) == ((OffsetRange("t", 0, 0, 5),), (OffsetRange("t", 0, 5, 10),))
    assert whole_batch([b, OffsetRange("t", 2, 3, 3), a]) == (a, b)


def _evaluator(bad: set[tuple[int, int]], calls: list[Part]) -> Callable[[Part], str | None]:
    def attempt(part: Part) -> str | None:
        calls.append(part)
        hits = sorted(
            (r.partition, o) for r in part for o in range(r.start, r.end) if (r.partition, o) in bad
        )
        return f"bad {hits[0]}" if hits else None

    return attempt


@given(
    st.sets(st.tuples(st.integers(0, 2), st.integers(0, 199)), max_size=12),
)
def test_bisection_finds_exactly_the_failing_offsets(bad: set[tuple[int, int]]) -> None:
    part = whole_batch([OffsetRange("t", p, 0, 200) for p in range(3)])
    calls: list[Part] = []
    found = isolate_failures(part, _evaluator(bad, calls))
    assert sorted((r.partition, r.start) for r, _ in found) == sorted(bad)
    assert all(error == f"bad {(r.partition, r.start)}" for r, error in found)
    assert all(r.size == 1 for r, _ in found)
    # About 2·k·log2(n/k) evaluations: at most 2 per level per failing offset, plus one.
    assert len(calls) <= 1 + 2 * max(1, len(bad)) * 11


def test_a_failure_no_single_record_causes_finds_nothing() -> None:
    """A query that fails only over several records (not row by row) isolates nothing,
    and the caller reports the batch's error instead of dropping records."""

    def attempt(part: Part) -> str | None:
        return "boom" if sum(r.size for r in part) > 4 else None

    assert isolate_failures((OffsetRange("t", 0, 0, 64),), attempt) == []


class _FlakyQueue(DeadLetterQueue):
    """A dead letter queue whose publish fails `failures` times, then succeeds."""

    def __init__(self, settings: ErrorHandlingSettings, failures: int, tmp_path: Path) -> None:
        context = TaskContext("c", 0, {}, {}, tmp_path)
        super().__init__(KafkaConnection("127.0.0.1:1"), "dlq", context, settings, None, self._nap)
        self.failures = failures
        self.naps: list[float] = []

    def _nap(self, seconds: float) -> None:
        self.naps.append(seconds)

    def _publish_once(self, intents: IntentLog, batch_id: int, rows: Sequence[OutRow]) -> None:
        if self.failures:
            self.failures -= 1
            raise KafkaUnavailableError("broker away")


def test_a_failed_publish_is_retried_within_the_timeout(tmp_path: Path) -> None:
    patient = settings({"errors.retry.timeout": "60000", "errors.retry.delay.max.ms": "500"})
    queue = _FlakyQueue(patient, 2, tmp_path)
    counts = queue.publish(0, [FAILED, FAILED])
    assert (counts.requests, counts.failures) == (6, 4)
    assert queue.naps == [0.3, 0.5]


def test_a_publish_that_keeps_failing_fails_with_its_counts(tmp_path: Path) -> None:
    queue = _FlakyQueue(settings({}), 5, tmp_path)
    with pytest.raises(DeadLetterQueuePublishError) as failed:
        queue.publish(0, [FAILED])
    assert (failed.value.counts.requests, failed.value.counts.failures) == (1, 1)
    assert queue.naps == []


def test_a_limit_stops_at_the_first_failures_found() -> None:
    """`errors.tolerance=none` needs one failing record to name, not all of them."""
    calls: list[Part] = []
    bad = {(0, n) for n in range(0, 200, 3)}
    found = isolate_failures((OffsetRange("t", 0, 0, 200),), _evaluator(bad, calls), limit=1)
    assert [(r.partition, r.start) for r, _ in found] == [(0, 0)]
    assert len(calls) <= 2 * 8 + 1


def test_a_strict_task_fails_naming_the_first_record_its_sink_could_not_write() -> None:
    strict = StrictBatches("SELECT * FROM source", "source", "c-0")
    strict.put_failed(3, "kafka-to-jdbc", [])
    failures = [
        PutFailure("orders", 1, 17, "psycopg2.errors.CheckViolation", 'table "o": violates'),
        PutFailure("orders", 1, 18, "psycopg2.errors.CheckViolation", 'table "o": violates'),
    ]
    with pytest.raises(RecordFailedError) as failed:
        strict.put_failed(3, "kafka-to-jdbc", failures)
    assert str(failed.value) == (
        "kafka-to-jdbc could not write the record at topic orders, partition 1, offset 17 "
        '(errors.tolerance=none) (1 more in batch 3): table "o": violates'
    )
