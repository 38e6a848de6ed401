"""How a kafka-to-jdbc task writes one batch into PostgreSQL: all its tables and (in
`insert` mode) its ledger row in one transaction.

The batch is collected to the worker as Arrow (`DataFrame.toArrow`), each table's rows
written by Arrow as CSV and sent with `COPY` through psycopg2: measured faster than the
JVM driver through a staging table (docs/connectors/kafka-to-jdbc.md, "why this driver"),
and the transaction stays in one connection the task holds, so the ledger row commits
with the rows (`ledger`). Tables are created and evolved first (`tables`).

Per batch: claim the batch in the ledger (insert mode; a batch found there is skipped),
keep each key's latest record (upsert and update mode), then per table, `batch.size`
rows at a time under a savepoint, the rows applied (`sql.apply_statements`); a
part refused for a record's error is found row by row (`failures.apply_in_parts`),
the rows at fault handed to the task's error handling (`put_failed`: the task fails
naming the record, or they go to the dead letter queue), and the rest committed. An
error that may pass is retried from the start of the batch (`max.retries`,
`retry.backoff.ms`), on a new connection.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from worker.connectors.jdbc.failures import apply_in_parts, is_record_error
from worker.connectors.jdbc.ledger import claim, forget_old, oldest_kept
from worker.connectors.jdbc.row_shape import (
    RECORD_COLUMNS,
    RowShape,
    RowShapeError,
    row_shape,
)
from worker.connectors.jdbc.sql import (
    SEQ_COLUMN,
    TOMBSTONE_COLUMN,
    TableName,
    apply_statements,
    copy_into,
    create_stage,
    stage_name,
    truncate,
)
from worker.connectors.jdbc.tables import JdbcSinkError, JdbcTables, SinkRules, TransientError
from worker.records.errors.failed_records import PutFailed, PutFailure

if TYPE_CHECKING:
    import pyarrow
    from pyspark.sql import Column, DataFrame

log = logging.getLogger(__name__)

SINK_CLASS: Final = "kafka-to-jdbc"
"""The `class.name` of a record this sink could not write, in the dead letter queue."""
TOMBSTONE: Final = "__tombstone"
ROW_NUMBER: Final = "__row"


@dataclass(frozen=True)
class TaskIdentity:
    connector: str
    task: int
    query_id: Callable[[], str]
    """The checkpoint's query id (the ledger's key), read when first needed."""


@dataclass
class TableRows:
    """One table's rows of a batch, in offset order: the table's columns as written
    (`c0`..), then the record's topic, partition, offset and whether it is a tombstone."""

    table: TableName
    rows: pyarrow.Table
    width: int

    def data(self, start: int, end: int, staged: bool) -> bytes:
        """Rows `[start, end)` as CSV for COPY; `staged`: with order and tombstone."""
        import pyarrow as pa
        from pyarrow import csv

        part = self.rows.slice(start, end - start)
        columns = part.select(list(range(self.width)))
        if staged:
            sequence = pa.array(range(start, end), pa.int64())
            columns = columns.append_column(SEQ_COLUMN, sequence).append_column(
                TOMBSTONE_COLUMN, part.column(TOMBSTONE)
            )
        out = io.BytesIO()
        csv.write_csv(columns, out, csv.WriteOptions(include_header=False))
        return out.getvalue()

    def record(self, index: int) -> tuple[str, int, int]:
        return (
            str(self.rows.column("topic")[index].as_py()),
            int(self.rows.column("partition")[index].as_py()),
            int(self.rows.column("offset")[index].as_py()),
        )


@dataclass
class JdbcBatchWriter:
    """A task's writes: `__call__(rows, batch_id)` is its `foreachBatch` commit."""

    tables: JdbcTables
    identity: TaskIdentity
    put_failed: PutFailed
    tolerant: bool
    """`errors.tolerance=all`: every refused record is found, not only the first."""
    sleep: Callable[[float], None] = time.sleep
    _query_id: str | None = None

    @property
    def rules(self) -> SinkRules:
        return self.tables.rules

    def __call__(self, rows: DataFrame, batch_id: int) -> None:
        shape = self._shape(rows)
        collected = rows.select(*_projection(shape)).toArrow()
        tables = self._by_table(collected, shape)
        if not tables:
            return
        for attempt in range(self.rules.max_retries + 1):
            try:
                self._write(shape, tables, batch_id)
                return
            except TransientError as exc:
                if attempt == self.rules.max_retries:
                    raise JdbcSinkError(
                        f"{exc} (tried {attempt + 1} times, max.retries="
                        f"{self.rules.max_retries}, retry.backoff.ms="
                        f"{self.rules.retry_backoff_ms})"
                    ) from None
                log.warning(
                    "%s-%s: batch %s not written, trying again in %s ms: %s",
                    self.identity.connector,
                    self.identity.task,
                    batch_id,
                    self.rules.retry_backoff_ms,
                    exc,
                )
                self.tables.forget_columns()
                self.sleep(self.rules.retry_backoff_ms / 1000)

    def _shape(self, rows: DataFrame) -> RowShape:
        try:
            return row_shape(rows.schema, self.rules.pk_mode, self.rules.pk_fields)
        except RowShapeError as exc:
            raise JdbcSinkError(f"kafka-to-jdbc cannot write these rows: {exc}") from None

    def _by_table(self, collected: pyarrow.Table, shape: RowShape) -> list[TableRows]:
        """The batch's rows per table, in offset order; tombstones only where they
        delete; in upsert and update mode only each key's latest record."""
        import pyarrow.compute as pc

        ordered = collected.sort_by([(name, "ascending") for name in RECORD_COLUMNS])
        if not self.rules.delete_enabled:
            ordered = ordered.filter(pc.invert(ordered.column(TOMBSTONE)))
        key = [f"c{i}" for i, column in enumerate(shape.columns) if column.name in shape.key]
        tables = []
        for topic in ordered.column("topic").unique().to_pylist():
            table = self.tables.table(str(topic))
            mine = ordered.filter(pc.equal(ordered.column("topic"), topic))
            if self.rules.insert_mode != "insert":
                mine = latest_per_key(mine, key)
            tables.append(TableRows(table, mine, len(shape.columns)))
        return tables

    def _write(self, shape: RowShape, tables: Sequence[TableRows], batch_id: int) -> None:
        with self.tables.connection() as connection:
            for rows in tables:
                self.tables.prepare(connection, rows.table, shape)
            insert = self.rules.insert_mode == "insert"
            if insert:
                self.tables.ensure_ledger(connection)
            with self.tables.statements(connection, "batch") as cursor:
                if self._query_id is None:
                    self._query_id = self.identity.query_id()
                query_id = self._query_id
                if insert:
                    cursor.execute(
                        claim(), (query_id, batch_id, self.identity.connector, self.identity.task)
                    )
                    if cursor.rowcount == 0:
                        connection.rollback()
                        log.info(
                            "%s-%s: batch %s is in the database already (ledger): not written "
                            "again",
                            self.identity.connector,
                            self.identity.task,
                            batch_id,
                        )
                        return
                failures: list[PutFailure] = []
                for index, rows in enumerate(tables):
                    failures += self._apply(cursor, shape, rows, index)
                if failures:
                    self.put_failed(batch_id, SINK_CLASS, failures)
                if insert:
                    cursor.execute(forget_old(), (query_id, oldest_kept(batch_id)))
            with self.tables.statements(connection, "commit"):
                connection.commit()

    def _apply(self, cursor: Any, shape: RowShape, rows: TableRows, index: int) -> list[PutFailure]:
        """Apply one table's rows; the records it refused."""
        direct = self.rules.insert_mode == "insert" and not self.rules.delete_enabled
        names = shape.names
        stage = stage_name(index)
        if not direct:
            cursor.execute(create_stage(stage, rows.table, names))
        statements = apply_statements(
            self.rules.insert_mode,
            rows.table,
            stage,
            shape.key,
            names,
            self.rules.delete_enabled,
        )
        staged_columns = [*names, SEQ_COLUMN, TOMBSTONE_COLUMN]

        def attempt(start: int, end: int) -> Any:
            cursor.execute("SAVEPOINT part")
            try:
                if direct:
                    data = rows.data(start, end, staged=False)
                    cursor.copy_expert(copy_into(rows.table, names), io.BytesIO(data))
                else:
                    cursor.execute(truncate(stage))
                    data = rows.data(start, end, staged=True)
                    cursor.copy_expert(copy_into(stage, staged_columns), io.BytesIO(data))
                    for statement in statements:
                        cursor.execute(statement)
            except Exception as exc:
                if not is_record_error(getattr(exc, "pgcode", None)):
                    raise
                cursor.execute("ROLLBACK TO SAVEPOINT part")
                return exc
            cursor.execute("RELEASE SAVEPOINT part")
            return None

        limit = None if self.tolerant else 1
        found = apply_in_parts(rows.rows.num_rows, self.rules.batch_size, attempt, limit)
        return [self._failure(rows, row, error) for row, error in found]

    def _failure(self, rows: TableRows, row: int, error: Any) -> PutFailure:
        topic, partition, offset = rows.record(row)
        return PutFailure(
            topic,
            partition,
            offset,
            f"{type(error).__module__}.{type(error).__name__}",
            f"table {rows.table}: {self.tables.reason(error)}",
        )


def latest_per_key(rows: pyarrow.Table, key: Sequence[str]) -> pyarrow.Table:
    """The last of `rows` (in offset order) of each `key`, in that order: what an upsert
    or an update of all of them leaves in the table, read before the batch crosses to
    the database (a key updated ten times in a batch is sent once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    numbered = rows.append_column(ROW_NUMBER, pa.array(range(rows.num_rows), pa.int64()))
    last = numbered.group_by(list(key), use_threads=False).aggregate([(ROW_NUMBER, "max")])
    ends = last.column(f"{ROW_NUMBER}_max")
    return rows.take(pc.take(ends, pc.sort_indices(ends)))


def _projection(shape: RowShape) -> list[Column]:
    """The batch's table columns as COPY writes them (`c0`..), then the record's place
    and whether it is a tombstone."""
    from pyspark.sql import functions as f

    projected = []
    for index, column in enumerate(shape.columns):
        source = f.col(column.side)
        if column.field is not None:
            source = source.getField(column.field)
        if column.encoding == "json":
            source = f.to_json(source)
        elif column.encoding == "hex":
            source = f.concat(f.lit("\\x"), f.hex(source))
        projected.append(source.alias(f"c{index}"))
    return [
        *projected,
        *(f.col(name) for name in RECORD_COLUMNS),
        f.col("value").isNull().alias(TOMBSTONE),
    ]
