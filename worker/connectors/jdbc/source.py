"""`sparkherd-jdbc`: one PostgreSQL table (or one `query`) read incrementally into Spark
by a Python streaming data source, its high-water mark the source's offset
(`positions`), so Spark's checkpoint is where a task stands.

Spark plans batches on the driver: `latestOffset` asks the database where the next
`batch.max.rows` rows end (`TableQueries.next_mark`), from the mark the reader last
planned. Spark does not say where it stands when a query restarts; it plans the last
batch of its offset log again first (`partitions`), which is where the reader learns it,
as PySpark's own simple-reader wrapper does. Each batch is one input partition, read in
an executor with a connection of its own, its rows in order: the Kafka sink numbers a
table's rows of a batch by that order (`worker.kafka.sink`).

Every transaction is READ ONLY, and every session runs in UTC, so a timestamp without a
time zone means the same instant to the bound the connector writes and to the mark it
reads back. A connection that fails is opened again `connection.attempts` times,
`connection.backoff.ms` apart (Confluent's keys); any failure names the table and the
server, never the password.

No statement outlives its task for long. Each runs under `query.timeout.ms` (the
session's `statement_timeout`; while the task starts, no longer than its start may still
take). A stopped query's Python processes are killed by Spark, which PostgreSQL would
notice only when it next writes to them (a `pg_sleep(3600)` ran on for the hour), so every
session asks the server to look for its client while a statement runs
(`client_connection_check_interval`, PostgreSQL 14 and later): a statement whose task
was stopped, deleted, moved or killed with its worker ends within that interval.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import psycopg2
from psycopg2 import sql
from psycopg2.extensions import QueryCanceledError
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from worker.connectors.jdbc.connection import (
    PASSWORD_KEY,
    DatabaseConnectionError,
    JdbcDatabase,
    JdbcUrl,
)
from worker.connectors.jdbc.positions import Mark, Mode, mark_from_key, mark_of, offset_of
from worker.connectors.jdbc.queries import Column, TableQueries
from worker.plugins.start_deadline import StartDeadline

FORMAT: Final = "sparkherd-jdbc"
SPEC_OPTION: Final = "table.spec"
FETCH_ROWS: Final = 2_000
"""Rows a server-side cursor hands over at a time: a batch's rows are never all held."""
QUERY_TIMEOUT_KEY: Final = "query.timeout.ms"
QUERY_TIMEOUT_MS_DEFAULT: Final = 300_000
CLIENT_CHECK_INTERVAL_MS: Final = 1_000
"""How often the server looks, while a statement runs, whether its client is still
there (`client_connection_check_interval`)."""
CLIENT_CHECK_SINCE: Final = 140_000
"""The server version (`server_version_num`) from which PostgreSQL has that setting."""

Result = TypeVar("Result")


class TableReadError(RuntimeError):
    """Reading a table failed; the message names the table and the server."""


@dataclass(frozen=True)
class TableSource:
    """One table of one task: where it is, how to read it, and its columns."""

    database: JdbcDatabase
    table: str
    queries: TableQueries
    columns: tuple[Column, ...]
    batch_max_rows: int
    attempts: int = 3
    backoff_ms: int = 10_000
    query_timeout_ms: int = QUERY_TIMEOUT_MS_DEFAULT

    def options(self) -> dict[str, str]:
        """The data source's options; the password apart, under a key Spark redacts."""
        spec = {
            "url": asdict(self.database.url),
            "user": self.database.user,
            "table": self.table,
            "queries": {**asdict(self.queries), "relation": self.queries.relation},
            "columns": [asdict(column) for column in self.columns],
            "batch_max_rows": self.batch_max_rows,
            "attempts": self.attempts,
            "backoff_ms": self.backoff_ms,
            "query_timeout_ms": self.query_timeout_ms,
        }
        options = {SPEC_OPTION: json.dumps(spec)}
        if self.database.password is not None:
            options[PASSWORD_KEY] = self.database.password
        return options

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> TableSource:
        spec = json.loads(options[SPEC_OPTION])
        queries = dict(spec["queries"])
        relation = queries.pop("relation")
        url = spec["url"]
        parameters = tuple((name, value) for name, value in url.pop("parameters"))
        database = JdbcDatabase(
            JdbcUrl(**url, parameters=parameters), spec["user"], options.get(PASSWORD_KEY)
        )
        return cls(
            database,
            spec["table"],
            TableQueries(
                relation if isinstance(relation, str) else tuple(relation),
                mode=queries["mode"],
                incrementing=queries["incrementing"],
                timestamps=tuple(queries["timestamps"]),
                delay_ms=queries["delay_ms"],
            ),
            tuple(Column(**column) for column in spec["columns"]),
            spec["batch_max_rows"],
            spec["attempts"],
            spec["backoff_ms"],
            spec["query_timeout_ms"],
        )

    @property
    def mode(self) -> Mode:
        return self.queries.mode

    def failure(self, action: str, exc: BaseException) -> TableReadError:
        reason = self.database.hide(" ".join(str(exc).split()))
        if isinstance(exc, QueryCanceledError):
            reason += f" ({QUERY_TIMEOUT_KEY}={self.query_timeout_ms})"
        if isinstance(exc, DatabaseConnectionError):
            return TableReadError(f"Cannot {action} table {self.table!r}: {reason}")
        return TableReadError(f"Cannot {action} table {self.table!r} on {self.database}: {reason}")

    def connect(self, deadline: StartDeadline | None = None) -> Any:
        """A connection for READ ONLY transactions in UTC, after up to `attempts` tries,
        whose statements end within `query.timeout.ms`. A task's start passes its
        `deadline`: the back-off waits on it, and a statement takes no longer than the
        start may still take."""
        deadline = deadline or StartDeadline()
        attempt = 1
        while True:
            deadline.check()
            try:
                connection = self.database.connect(deadline.remaining())
            except DatabaseConnectionError as exc:
                if attempt == self.attempts:
                    raise self.failure("read", exc) from None
                attempt += 1
                deadline.wait(self.backoff_ms / 1000)
                continue
            try:
                self._set_up(connection, min(self.query_timeout_ms, deadline.remaining() * 1000))
            except psycopg2.Error as exc:
                connection.close()
                raise self.failure("read", exc) from None
            return connection

    @staticmethod
    def _set_up(connection: Any, timeout_ms: float) -> None:
        """The session's settings (see the module docstring), committed so they last."""
        connection.set_session(readonly=True)
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'UTC'")
            timeout = sql.Literal(f"{max(1, int(timeout_ms))}ms")
            cursor.execute(sql.SQL("SET statement_timeout = {}").format(timeout))
            if connection.server_version >= CLIENT_CHECK_SINCE:
                interval = sql.Literal(f"{CLIENT_CHECK_INTERVAL_MS}ms")
                cursor.execute(
                    sql.SQL("SET client_connection_check_interval = {}").format(interval)
                )
        connection.commit()

    def next_mark(self, connection: Any, mark: Mark | None) -> Mark | None:
        """Where the next batch ends: the mark of the last of its rows (None: no row)."""
        with connection.cursor() as cursor:
            cursor.execute(self.queries.next_mark(mark, self.batch_max_rows))
            found = cursor.fetchone()
        connection.commit()
        return None if found is None else mark_from_key(self.mode, found)

    def rows(self, start: Mark | None, end: Mark) -> Iterator[tuple[object, ...]]:
        try:
            with contextlib.closing(self.connect()) as connection:
                with connection.cursor(name="sparkherd_rows") as cursor:
                    cursor.itersize = FETCH_ROWS
                    cursor.execute(self.queries.rows(self.columns, start, end))
                    for row in cursor:
                        yield tuple(_spark_value(value) for value in row)
                connection.commit()
        except psycopg2.Error as exc:
            raise self.failure("read", exc) from None


def _spark_value(value: object) -> object:
    """bytea comes as a memoryview, which Spark's BINARY does not take; a timestamp
    without a time zone as a naive datetime, which Spark would read in the Python
    worker's local zone: it is the UTC instant (see `queries.TIMESTAMP_TYPES`)."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


@dataclass(frozen=True)
class TableRange(InputPartition):  # type: ignore[misc]
    """One batch of one table: the rows after `start` up to `end`."""

    source: TableSource
    start: Mark | None
    end: Mark


class TableStreamReader(DataSourceStreamReader):  # type: ignore[misc]
    """Plans batches on the driver, with one connection for the query's lifetime."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._source = TableSource.from_options(options)
        self._planned: Mark | None = None
        self._known = False
        self._connection: Any = None

    def _offset(self, mark: Mark | None) -> dict[str, dict[str, int]]:
        return offset_of(self._source.table, self._source.mode, mark)

    def _mark(self, offset: Mapping[str, object]) -> Mark | None:
        return mark_of(offset, self._source.table, self._source.mode)

    def initialOffset(self) -> dict[str, dict[str, int]]:
        return self._offset(None)

    def latestOffset(self) -> dict[str, dict[str, int]]:
        """At most `batch.max.rows` rows past the last planned batch (on a first start,
        past the initial offset)."""
        start = self._planned if self._known else None
        end = self._with_connection(lambda c: self._source.next_mark(c, start))
        return self._offset(start if end is None else end)

    def _with_connection(self, use: Callable[[Any], Result]) -> Result:
        """`use` on the reader's connection; once more on a new one when the database
        dropped it (a restart), not when the statement ran past `query.timeout.ms`."""
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = self._source.connect()
            try:
                return use(self._connection)
            except QueryCanceledError as exc:
                self._close()
                raise self._source.failure("read", exc) from None
            except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
                self._close()
                if attempt == 2:
                    raise self._source.failure("read", exc) from None
            except psycopg2.Error as exc:
                with contextlib.suppress(psycopg2.Error):
                    self._connection.rollback()
                raise self._source.failure("read", exc) from None
        raise AssertionError("unreachable")

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[TableRange]:
        first, last = self._mark(start), self._mark(end)
        self._planned, self._known = last, True
        if last is None or first == last:
            return []
        return [TableRange(self._source, first, last)]

    def read(self, partition: TableRange) -> Iterator[tuple[object, ...]]:
        return partition.source.rows(partition.start, partition.end)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the checkpoint, not the database, holds the mark."""

    def _close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(psycopg2.Error):
                self._connection.close()
            self._connection = None

    def stop(self) -> None:
        self._close()


class JdbcDataSource(DataSource):  # type: ignore[misc]
    """Read with a schema given (`readStream.schema`): the task learns the columns from
    the database before the query starts, where a failure is its own to report."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TableStreamReader(self.options)
