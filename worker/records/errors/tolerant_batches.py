"""`errors.tolerance=all` for one batch of Kafka records: the records that fail
conversion or `transform.sql` are taken out, sent to the dead letter queue and counted,
and the rest is handed on to be committed.

The task's query streams the decoded records (`worker.records.converters.records`, failed ones
marked) into `foreachBatch`; here, per batch, in the batch's own session (a clone of the
task's query session, so `source` is this task's view and its settings hold):

1. the batch is cached; the records its converters marked are failed records;
2. `transform.sql` runs over the others as `source`, first with Spark's `noop` sink;
   when it fails with a per-record error (SQLSTATE class 22, a data exception such as a
   bad cast under ANSI mode or a division by zero; or `raise_error`), the failing
   records are found by bisection (`bisection`), each with its own error;
3. the failed records are published to the dead letter queue, once (`dead_letter_queue`),
   and the batch's counts written (`worker.records.errors.task_errors`);
4. the query's result without the failed records goes to `commit` (the file sink, which
   commits a batch id once). A sink that writes outside Spark (a database) may find
   records it cannot write; it hands them to `put_failed` before it commits the rest,
   and they go the same way (stage `TASK_PUT`), added to the batch's counts.

Exactly once, on both outputs: Spark logs a batch's offsets before it runs, so a batch
that runs again (a crash, a restart, another worker) holds the same records; conversion
and a deterministic query fail on the same ones; the dead letter queue skips what it
already has of the batch; and the file sink skips a batch id it committed. Since the
dead letter queue is published before the files are committed, committed files mean
their batch's failed records are in the dead letter queue.

Errors that are not a record's (a query that cannot run at all, a failure no single
record causes) fail the task as they would without tolerance.
"""

from __future__ import annotations

import logging
import operator
import time
from collections.abc import Callable, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Final

from pyspark.errors import PySparkException

from worker.plugins.api import TaskContext
from worker.records.converters.records import (
    ERROR_COLUMN,
    KAFKA_COLUMNS,
    ORIGINAL_HEADERS,
    ORIGINAL_KEY,
    ORIGINAL_VALUE,
)
from worker.records.converters.spec import CLASS_NAMES, RecordConverters
from worker.records.errors.bisection import OffsetRange, Part, isolate_failures, whole_batch
from worker.records.errors.dead_letter_queue import (
    DeadLetterQueue,
    DeadLetterQueuePublishError,
    PublishCounts,
)
from worker.records.errors.failed_records import (
    CONVERSION_EXCEPTION,
    TRANSFORM_CLASS,
    FailedRecord,
    PutFailure,
    Stage,
    log_line,
)
from worker.records.errors.settings import ErrorHandlingSettings
from worker.records.errors.task_errors import BatchErrors, write_batch_errors
from worker.records.errors.transform_failures import (
    chain_failed_rows,
    read_from,
    transform_failed,
    transform_failure,
)
from worker.records.sql_policy import QUERY_SESSION_CONF

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession

log = logging.getLogger(__name__)

IDENTITY: Final = ("topic", "partition", "offset")
RECORD_ERROR_STATES: Final = ("22", "P0001")
"""SQLSTATE prefixes of errors one record causes: class 22 (data exceptions: casts,
arithmetic, out-of-range values, malformed input) and `raise_error`'s P0001."""


def is_record_error(error: BaseException) -> bool:
    """Whether Spark failed on a value (one record's), not on the query or the cluster."""
    if not isinstance(error, PySparkException):
        return False
    state = error.getSqlState() or ""
    return state.startswith(RECORD_ERROR_STATES)


def batch_query(sql: str, view: str, rows: DataFrame) -> DataFrame:
    """`sql` over `rows` as `view`, in the session of `rows`. Not checked again: the task
    checked the query (`sql_policy.checked_query`) against the streaming view when it
    started, and every batch's rows (or a part of them) have that view's schema, so the
    same text makes the same plan over them; checking it per batch, and per bisection
    step, would cost py4j walks of the plan each time."""
    rows.createOrReplaceTempView(view)
    return rows.sparkSession.sql(sql)


def use_query_settings(batch: DataFrame) -> SparkSession:
    """The batch's own session (a clone of the task's query session, where `source` is
    this task's view), set as every session that runs a connector's SQL is."""
    session = batch.sparkSession
    for key, value in QUERY_SESSION_CONF.items():
        session.conf.set(key, value)
    return session


def _jvm_class(error: PySparkException) -> str:
    origin = getattr(error, "_origin", None)
    try:
        return str(origin.getClass().getName()) if origin is not None else type(error).__name__
    except Exception:
        return type(error).__name__


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class TolerantBatches:
    """The `foreachBatch` step of a task with `errors.tolerance=all`."""

    def __init__(
        self,
        sql: str,
        view: str,
        converters: RecordConverters,
        settings: ErrorHandlingSettings,
        context: TaskContext,
        dead_letter_queue: DeadLetterQueue | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._sql = sql
        self._view = view
        self._converters = converters
        self._settings = settings
        self._context = context
        self._dlq = dead_letter_queue
        self._clock = clock
        self._batch: DataFrame | None = None
        """The batch being committed (cached): where `put_failed` finds a record's bytes."""
        self._counts = BatchErrors()
        """The counts written for it so far."""
        self._put_failed: set[tuple[str, int, int]] = set()
        """The records the sink reported so far (a sink that tries a batch again after a
        lost connection reports them again: they are counted once)."""

    def __call__(
        self, batch: DataFrame, batch_id: int, commit: Callable[[DataFrame], None]
    ) -> None:
        session = use_query_settings(batch)
        batch.persist()
        self._batch, self._counts = batch, BatchErrors()
        self._put_failed.clear()
        try:
            converted = batch[ERROR_COLUMN].isNull()
            good = batch.where(converted & ~transform_failed(batch)).select(*KAFKA_COLUMNS)
            failed = [self._conversion_failure(row) for row in _failed_conversions(batch)]
            failed += [
                _failed(row, "TRANSFORMATION", *transform_failure(row))
                for row in chain_failed_rows(batch, converted)
            ]
            output = batch_query(self._sql, self._view, good)
            error = _attempt(output)
            if error is not None:
                found = self._transform_failures(batch, good, error)
                failed += found
                where = [(r.topic, r.partition, r.offset) for r in found]
                kept = good.join(_identities(session, where), list(IDENTITY), "left_anti")
                view = kept.select(*KAFKA_COLUMNS)
                output = batch_query(self._sql, self._view, view)
            self._handle(batch_id, failed)
            commit(output)
        finally:
            self._batch = None
            batch.unpersist()

    def put_failed(self, batch_id: int, sink: str, failures: Sequence[PutFailure]) -> None:
        """Records of the batch being committed that the sink could not write: logged,
        sent to the dead letter queue and counted, as the batch's other failed records."""
        by_identity = {
            identity: f
            for f in failures
            if (identity := (f.topic, f.partition, f.offset)) not in self._put_failed
        }
        if not by_identity or self._batch is None:
            return
        batch = self._batch
        self._put_failed.update(by_identity)
        rows = batch.join(
            _identities(batch.sparkSession, list(by_identity)), list(IDENTITY), "left_semi"
        )
        failed = []
        for row in rows.collect():
            failure = by_identity[(row["topic"], row["partition"], row["offset"])]
            failed.append(_failed(row, "TASK_PUT", sink, failure.exception_class, failure.message))
        self._handle(batch_id, failed)

    def _conversion_failure(self, row: Row) -> FailedRecord:
        side = "key" if str(row[ERROR_COLUMN]).startswith("key") else "value"
        spec = self._converters.key if side == "key" else self._converters.value
        where = f"topic {row['topic']}, partition {row['partition']}, offset {row['offset']}"
        return _failed(
            row,
            "KEY_CONVERTER" if side == "key" else "VALUE_CONVERTER",
            CLASS_NAMES[spec.kind],
            CONVERSION_EXCEPTION,
            f"Cannot convert the {row[ERROR_COLUMN]} of the record at {where}",
        )

    def _transform_failures(
        self, batch: DataFrame, good: DataFrame, error: PySparkException
    ) -> list[FailedRecord]:
        """The records `transform.sql` fails on, each with its own error."""
        session = batch.sparkSession
        found = locate_failures(good, self._sql, self._view, error, self._context.query_name)
        errors = {(r.topic, r.partition, r.start): e for r, e in found}
        rows = batch.join(_identities(session, list(errors)), list(IDENTITY), "left_semi")
        return [
            _failed(
                row,
                "TRANSFORMATION",
                TRANSFORM_CLASS,
                _jvm_class(error),
                first_line(error),
                getattr(error, "_stackTrace", None) or None,
            )
            for row in rows.collect()
            for error in [errors[(row["topic"], row["partition"], row["offset"])]]
        ]

    def _handle(self, batch_id: int, failed: Sequence[FailedRecord]) -> None:
        """Log, publish and count the batch's failed records, before its files commit."""
        if not failed:
            return
        settings = self._settings
        logged = 0
        if settings.errors_log_enable:
            for record in failed:
                log.error(
                    "%s",
                    log_line(
                        record,
                        self._context.connector,
                        self._context.task,
                        include_messages=settings.errors_log_include_messages,
                    ),
                )
                logged += 1
        counts = PublishCounts(0, 0)
        try:
            if self._dlq is not None:
                counts = self._dlq.publish(batch_id, failed)
        except DeadLetterQueuePublishError as exc:
            counts = exc.counts
            raise
        finally:
            self._counts += BatchErrors(
                record_errors=len(failed),
                record_failures=len(failed) + counts.failures,
                records_skipped=len(failed),
                errors_logged=logged,
                deadletterqueue_produce_requests=counts.requests,
                deadletterqueue_produce_failures=counts.failures,
                last_error_timestamp_ms=int(self._clock() * 1000),
            )
            write_batch_errors(self._context.checkpoint_dir, batch_id, self._counts)


def locate_failures(
    good: DataFrame,
    sql: str,
    view: str,
    error: PySparkException,
    task: str,
    limit: int | None = None,
) -> list[tuple[OffsetRange, PySparkException]]:
    """The single records of `good` (cached, the batch's convertible records) that `sql`
    over them as `view` fails on, found by bisection over offset ranges (`bisection`);
    `error` is the failure of the whole, raised again when no single record causes it."""
    from pyspark.sql import functions as f

    ranges = good.groupBy("topic", "partition").agg(
        f.min("offset").alias("first"), f.max("offset").alias("last")
    )
    part = whole_batch(
        [
            OffsetRange(r["topic"], r["partition"], r["first"], r["last"] + 1)
            for r in ranges.collect()
        ]
    )

    def attempt(candidate: Part) -> PySparkException | None:
        return _attempt(batch_query(sql, view, good.where(_within(candidate))))

    started = time.monotonic()
    found = isolate_failures(part, attempt, error, limit=limit)
    if not found:
        raise error
    log.info(
        "%s: transform.sql failed on %d records of a batch of %d offsets, found by "
        "bisection in %.1f s",
        task,
        len(found),
        sum(r.size for r in part),
        time.monotonic() - started,
    )
    return found


def _attempt(query: DataFrame) -> PySparkException | None:
    """Run `query` to its end with Spark's `noop` sink: its record error, or None."""
    try:
        query.write.format("noop").mode("overwrite").save()
    except PySparkException as exc:
        if is_record_error(exc):
            return exc
        raise
    return None


def _failed_conversions(batch: DataFrame) -> list[Row]:
    rows: list[Row] = batch.where(batch[ERROR_COLUMN].isNotNull()).collect()
    return rows


def _within(part: Part) -> Column:
    """Rows whose offset lies in one of `part`'s ranges."""
    from pyspark.sql import functions as f

    conditions = [
        (f.col("topic") == r.topic)
        & (f.col("partition") == r.partition)
        & (f.col("offset") >= r.start)
        & (f.col("offset") < r.end)
        for r in part
    ]
    return reduce(operator.or_, conditions)


def _identities(session: SparkSession, where: Sequence[tuple[str, int, int]]) -> DataFrame:
    return session.createDataFrame(list(where), "topic STRING, partition INT, offset LONG")


def _failed(
    row: Row,
    stage: Stage,
    class_name: str,
    exception_class: str,
    message: str,
    stacktrace: str | None = None,
) -> FailedRecord:
    """A batch row (original columns and all) as a failed record."""
    return FailedRecord(
        topic=row["topic"],
        partition=row["partition"],
        offset=row["offset"],
        key=_bytes(row[ORIGINAL_KEY]),
        value=_bytes(row[ORIGINAL_VALUE]),
        headers=_headers(row),
        stage=stage,
        class_name=class_name,
        exception_class=exception_class,
        message=message,
        stacktrace=stacktrace,
        read_from=read_from(row),
    )


def _bytes(value: object) -> bytes | None:
    return None if value is None else bytes(value)  # type: ignore[call-overload]


def _headers(row: Row) -> tuple[tuple[str, bytes], ...]:
    """The record's original headers, when its source read them."""
    headers = row.asDict().get(ORIGINAL_HEADERS) or ()
    return tuple((str(h["key"]), bytes(h["value"] or b"")) for h in headers)
