"""A kafka-to-jdbc task's database: its connections, and its tables as the connector's
keys allow them to be made (`auto.create`) and widened (`auto.evolve`).

Each table change is one DDL statement in a short transaction of its own, before the
batch's transaction: DDL locks the whole table, and other tasks write to it. Two tasks
creating one table, or adding one column, at once may fail on a catalog's unique key;
then the other did it, and its result is read back. A table's columns are read when a
batch brings a column not seen in it before (someone may have added it), else not.

Every database error becomes the task's, naming what was being written and the database
(never the password); those that may pass (`failures.is_transient`) as
`TransientError`, which the writer retries.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from worker.connectors.jdbc.connection import DatabaseConnectionError, JdbcDatabase
from worker.connectors.jdbc.failures import is_transient
from worker.connectors.jdbc.ledger import create_ledger, sink_table
from worker.connectors.jdbc.row_shape import PkMode, RowShape, SinkColumn, missing_columns
from worker.connectors.jdbc.sql import (
    IdentifierError,
    InsertMode,
    TableName,
    add_columns,
    create_table,
    table_columns_query,
    table_exists_query,
)

log = logging.getLogger(__name__)


class JdbcSinkError(RuntimeError):
    """A batch could not be written for a reason no record causes; names the table and
    the database, never the password."""


class TransientError(JdbcSinkError):
    """An error that may pass: the batch is tried again."""


@dataclass(frozen=True)
class SinkRules:
    """What the connector's keys say about writing."""

    table_name_format: str
    insert_mode: InsertMode
    pk_mode: PkMode
    pk_fields: tuple[str, ...]
    auto_create: bool
    auto_evolve: bool
    delete_enabled: bool
    batch_size: int
    max_retries: int
    retry_backoff_ms: int


@dataclass
class JdbcTables:
    """One task's view of its database."""

    database: JdbcDatabase
    rules: SinkRules
    _columns: dict[TableName, list[str]] = field(default_factory=dict)
    """Each table's columns when last read: a batch within them needs no look."""
    _ledger_ready: bool = False

    def check(self, topics: Sequence[str]) -> None:
        """At the task's start, before any record is read: the database is reachable and
        takes the login, and without auto.create the topics' tables exist (else the task
        fails now, naming what is wrong); in insert mode the ledger table is made."""
        with self.connection(retry=False) as connection:
            if not self.rules.auto_create:
                for topic in topics:
                    table = self.table(topic)
                    if self._table_columns(connection, table) is None:
                        raise self._missing(table)
            if self.rules.insert_mode == "insert":
                self.ensure_ledger(connection)

    def table(self, topic: str) -> TableName:
        try:
            return sink_table(self.rules.table_name_format, topic)
        except IdentifierError as exc:
            raise JdbcSinkError(
                f"table.name.format {self.rules.table_name_format!r} makes no table name for "
                f"topic {topic!r}: {exc}"
            ) from None

    def _missing(self, table: TableName) -> JdbcSinkError:
        return JdbcSinkError(
            f"Table {table} does not exist in {self.database}, and auto.create=false: "
            "create it, or set auto.create=true"
        )

    def ensure_ledger(self, connection: Any) -> None:
        if not self._ledger_ready:
            self._ddl(connection, create_ledger(), "the ledger table")
            self._ledger_ready = True

    def forget_columns(self) -> None:
        """After a failure: the tables may have changed while the task waited."""
        self._columns.clear()

    def prepare(self, connection: Any, table: TableName, shape: RowShape) -> None:
        """Make sure `table` exists and has the shape's columns, as auto.create and
        auto.evolve allow."""
        known = self._columns.get(table)
        if known is not None and not missing_columns(shape, known):
            return
        columns = self._table_columns(connection, table)
        if columns is None:
            if not self.rules.auto_create:
                raise self._missing(table)
            self._ddl(connection, create_table(table, shape.new_columns(), shape.key), table)
            columns = self._table_columns(connection, table) or []
        missing = missing_columns(shape, columns)
        if missing:
            if not self.rules.auto_evolve:
                raise JdbcSinkError(
                    f"Table {table} in {self.database} has no column "
                    f"{_names(missing)} of the records, and auto.evolve=false: add them, "
                    "or set auto.evolve=true"
                )
            self._ddl(connection, add_columns(table, [c.new_column(False) for c in missing]), table)
            log.info("Added columns %s to table %s", _names(missing), table)
            columns = self._table_columns(connection, table) or []
        self._columns[table] = columns

    def _table_columns(self, connection: Any, table: TableName) -> list[str] | None:
        with self.statements(connection, f"table {table}") as cursor:
            cursor.execute(table_exists_query(), (table.sql(),))
            (exists,) = cursor.fetchone()
            if not exists:
                connection.rollback()
                return None
            cursor.execute(table_columns_query(), (table.sql(),))
            names = [str(row[0]) for row in cursor.fetchall()]
        connection.rollback()
        return names

    def _ddl(self, connection: Any, statement: str, what: object) -> None:
        """One DDL statement in a transaction of its own. Another task doing the same at
        once may make it fail on a catalog's unique key: then it is done."""
        import psycopg2

        with self.statements(connection, f"{what}") as cursor:
            try:
                cursor.execute(statement)
                connection.commit()
            except psycopg2.errors.UniqueViolation:
                connection.rollback()

    def reason(self, error: BaseException) -> str:
        """The server's message on one line (its detail included), password hidden."""
        text = getattr(error, "pgerror", None) or str(error)
        lines = [line.strip() for line in str(text).splitlines() if line.strip()]
        kept = [line for line in lines if not line.startswith(("CONTEXT:", "COPY "))]
        words = " ".join(kept or lines).removeprefix("ERROR:").split()
        return self.database.hide(" ".join(words))

    @contextlib.contextmanager
    def connection(self, retry: bool = True) -> Iterator[Any]:
        try:
            connection = self.database.connect()
        except DatabaseConnectionError as exc:
            if retry and is_transient(None, str(exc)):
                raise TransientError(str(exc)) from None
            raise
        try:
            yield connection
        finally:
            with contextlib.suppress(Exception):
                connection.close()

    @contextlib.contextmanager
    def statements(self, connection: Any, what: str) -> Iterator[Any]:
        """A cursor whose database errors become the task's, naming `what` and the
        database, the password hidden; those that may pass as `TransientError`."""
        import psycopg2

        try:
            with connection.cursor() as cursor:
                yield cursor
        except psycopg2.Error as exc:
            reason = self.reason(exc)
            message = f"Cannot write {what} in {self.database}: {reason}"
            if isinstance(exc, psycopg2.InterfaceError | psycopg2.OperationalError) or (
                is_transient(exc.pgcode, reason) and exc.pgcode is not None
            ):
                raise TransientError(message) from None
            raise JdbcSinkError(message) from None


def _names(columns: Sequence[SinkColumn]) -> str:
    return ", ".join(f'"{c.name}"' for c in columns)
