"""How a connector task appends to a Delta Lake table: Spark's Delta writer, with Delta's
idempotent writes keyed by the checkpoint.

Each micro-batch is one Delta commit carrying the transaction `(txnAppId, txnVersion)` =
(the streaming query's id, the batch id); Delta skips a write whose app id has already
committed that version or a later one, atomically with the commit. So a batch that runs
again after a crash, a restart or a move to another worker (the checkpoint logs its
offsets before it runs, and it re-reads exactly them) adds nothing the second time.

The app id is the id Spark keeps in `<checkpoint>/metadata`, as Delta's own streaming
sink uses it: written once when a query first starts on a checkpoint and read back by
every later start, so it follows the task wherever its checkpoint goes. Resetting the
task's offsets removes the checkpoint, and the next start is a new query with a new id
whose batches count from 0 again, which the table has never seen: a reset re-reads and
re-writes, never skips. Altering offsets appends a batch to the same checkpoint, and the
ids go on rising under the same app id.

Several tasks append to one table. Delta's optimistic commits let appends pass each
other, but two first batches creating the table, or two schema merges, collide; Delta
then raises a concurrent-modification exception and nothing is committed, and the
batch is tried again (its transaction id makes that safe even if it had committed).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from worker.connectors.claimed_batches import BatchStep, start_claimed_query
from worker.connectors.delta.checks import (
    SchemaEvolution,
    missing_partition_columns,
    plain_directory_refusal,
    schema_refusal,
)
from worker.connectors.table_columns import Column, columns_of, compare_columns
from worker.connectors.table_files import one_file_per_core
from worker.plugins.api import TaskContext
from worker.plugins.checkpoint_layout import checkpoint_query_id
from worker.runtime.failure_traces import MAX_CHAIN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

DELTA_CATALOG: Final = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
CONCURRENT_MODIFICATION: Final = "org.apache.spark.sql.delta.DeltaConcurrentModificationException"
COMMIT_ATTEMPTS: Final = 30
"""Tries of one batch's commit while other tasks' commits collide with it."""
MAX_BACKOFF_S: Final = 2.0

log = logging.getLogger(__name__)


class DeltaTableRefused(RuntimeError):
    """The batch would put something into the table (or the directory) it must not."""


def java_class_names(error: BaseException) -> list[str]:
    """Every class (and superclass) of the Java exception behind `error` and its causes."""
    throwable: Any = getattr(error, "java_exception", None)
    names: list[str] = []
    for _ in range(MAX_CHAIN):
        if throwable is None:
            break
        klass = throwable.getClass()
        while klass is not None:
            names.append(str(klass.getName()))
            klass = klass.getSuperclass()
        throwable = throwable.getCause()
    return names


def backoff_s(attempt: int) -> float:
    """Exponential from 50 ms, jittered so that colliding tasks spread out."""
    delay: float = min(MAX_BACKOFF_S, 0.05 * 2**attempt)
    return delay * random.uniform(0.5, 1.5)


class DeltaSink:
    """One task's appends to `path`, each batch once."""

    def __init__(
        self,
        session: SparkSession,
        path: str,
        partition_by: Sequence[str],
        evolution: SchemaEvolution,
        checkpoint_dir: Path,
    ) -> None:
        self._session = session
        self._path = path
        self._partition_by = tuple(partition_by)
        self._evolution = evolution
        self._checkpoint_dir = checkpoint_dir
        self._app_id: str | None = None
        self._known: list[Column] | None = None
        """The table's columns when last read: a batch within them needs no new look
        (a table's columns are only ever added)."""

    def write(self, rows: DataFrame, batch_id: int) -> None:
        batch = columns_of(rows.schema)
        refuse(missing_partition_columns(self._partition_by, batch))
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                self._check(batch)
                self._append(rows, batch_id)
                return
            except Exception as exc:
                classes = java_class_names(exc)
                if attempt + 1 == COMMIT_ATTEMPTS or CONCURRENT_MODIFICATION not in classes:
                    raise
                log.info(
                    "Batch %s for Delta table %s collided with another commit (%s), "
                    "attempt %s; trying again",
                    batch_id,
                    self._path,
                    classes[0],
                    attempt + 1,
                )
                self._known = None
                time.sleep(backoff_s(attempt))

    def refuse_plain_directory(self) -> None:
        refuse(plain_directory_refusal(self._path, self._entries()))

    def _check(self, batch: list[Column]) -> None:
        if self._known is not None:
            difference = compare_columns(self._known, batch)
            if not difference.added and not difference.changed:
                return
        table = self._table_columns()
        if table is None:
            self.refuse_plain_directory()
            return
        self._known = table
        refuse(schema_refusal(compare_columns(table, batch), self._evolution, self._path))

    def _append(self, rows: DataFrame, batch_id: int) -> None:
        if self._app_id is None:
            self._app_id = checkpoint_query_id(self._checkpoint_dir)
        writer = (
            one_file_per_core(rows)
            .write.format("delta")
            .mode("append")
            .option("txnAppId", self._app_id)
            .option("txnVersion", str(batch_id))
            .option("mergeSchema", str(self._evolution == "add-columns").lower())
        )
        if self._partition_by:
            writer = writer.partitionBy(*self._partition_by)
        writer.save(self._path)

    def _table_columns(self) -> list[Column] | None:
        jvm: Any = self._session._jvm
        if not jvm.io.delta.tables.DeltaTable.isDeltaTable(
            self._session._jsparkSession, self._path
        ):
            return None
        return columns_of(self._session.read.format("delta").load(self._path).schema)

    def _entries(self) -> list[str] | None:
        """The names in the table's location (its own name if a file), None if absent."""
        jvm: Any = self._session._jvm
        location = jvm.org.apache.hadoop.fs.Path(self._path)
        hadoop_conf = self._session.sparkContext._jsc.hadoopConfiguration()
        fs = location.getFileSystem(hadoop_conf)
        if not fs.exists(location):
            return None
        if not fs.getFileStatus(location).isDirectory():
            return [str(location.getName())]
        return [str(status.getPath().getName()) for status in fs.listStatus(location)]


def refuse(problem: str | None) -> None:
    if problem is not None:
        raise DeltaTableRefused(problem)


def start_delta_sink(
    rows: DataFrame,
    context: TaskContext,
    sink: DeltaSink,
    interval_ms: int,
    step: BatchStep | None = None,
) -> StreamingQuery:
    """Append `rows` (or what `step` makes of each batch) to the table every
    `interval_ms`. A worker without Delta's jars, or a location that is not a Delta
    table, fails the start, before any batch."""
    refuse_without_delta(rows.sparkSession)
    sink.refuse_plain_directory()
    return start_claimed_query(rows, context, interval_ms, sink.write, step)


def refuse_without_delta(session: SparkSession) -> None:
    from py4j.java_gateway import JavaClass

    jvm: Any = session._jvm
    if not isinstance(jvm.io.delta.tables.DeltaTable, JavaClass):
        raise DeltaTableRefused(
            "Delta Lake's jars are not on this worker's Spark (is the worker's "
            "delta.jvm.connector none?): kafka-to-delta cannot write"
        )


def delta_session(rows: DataFrame) -> SparkSession:
    """The task's own session, made able to write Delta (Delta 4 refuses without its
    catalog); other tasks' sessions are untouched."""
    session = rows.sparkSession
    session.conf.set("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    return session


def delta_has_batch(
    spark: SparkSession, path: str, checkpoint: Path, task: int, batch: int
) -> bool:
    """Whether the table at `path` holds batch `batch` of the checkpoint's query: Delta's
    own record of the newest `txnVersion` committed under the query's `txnAppId` (what a
    task asks before it takes partitions over from `checkpoint`,
    `worker.connectors.partition_takeover`)."""
    jvm: Any = spark._jvm
    if not jvm.io.delta.tables.DeltaTable.isDeltaTable(spark._jsparkSession, path):
        return False
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    none = jvm.scala.Option.empty()
    committed = log.update(False, none, none).transactions().get(checkpoint_query_id(checkpoint))
    return bool(committed.isDefined()) and int(committed.get()) >= batch
