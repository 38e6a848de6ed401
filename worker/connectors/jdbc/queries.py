"""The SQL `jdbc-to-kafka` runs, composed with `psycopg2.sql`: every name a user gives
(table, schema, columns) is a quoted identifier and every bound a literal, never text
formatted into a statement. A `query` is user SQL by design; it runs as a subquery of
the statement below, in a READ ONLY transaction, and may hold no `;` (which would end
the wrapping statement and start another).

For a table and its mode the connector runs two statements:

* `next_mark`: the order key of the last of at most `batch.max.rows` rows after the
  current mark, in order, among the rows old enough (`timestamp.delay.interval.ms`, by
  the database's clock): the end of the next batch.
* `rows`: every row after the batch's start mark up to its end mark, in order. Both
  bounds are in the offset Spark logged before the batch ran, so a batch that runs again
  reads the same rows, unless the table changed in between (a row updated in timestamp
  mode moves past the end and is read by a later batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from psycopg2 import sql

from worker.connectors.jdbc.positions import (
    EPOCH,
    Mark,
    Mode,
    instant,
    uses_incrementing,
    uses_timestamp,
)

QUERY_ALIAS: Final = "sparkherd_query"
KEY_ALIASES: Final = ("sparkherd_timestamp", "sparkherd_incrementing")

INTEGER_TYPES: Final = {21: "SMALLINT", 23: "INT", 20: "BIGINT"}
"""PostgreSQL type OIDs: int2, int4, int8."""
TIMESTAMP_TYPES: Final = {1114: "TIMESTAMP", 1184: "TIMESTAMP", 1082: "DATE"}
"""timestamp, timestamptz, date. A timestamp without a time zone is read as the UTC
instant it names (the sessions run in UTC), as Confluent's connector reads it: an
instant is what every converter writes (Connect's Timestamp, Avro's timestamp-micros)."""
_PLAIN_TYPES: Final = {
    **INTEGER_TYPES,
    **TIMESTAMP_TYPES,
    16: "BOOLEAN",
    17: "BINARY",
    25: "STRING",
    1043: "STRING",
    1042: "STRING",
    19: "STRING",
    700: "FLOAT",
    701: "DOUBLE",
}
"""bool, bytea, text, varchar, char(n), name, float4, float8; any other type is read as
its text form (a STRING)."""
NUMERIC: Final = 1700
MAX_DECIMAL_PRECISION: Final = 38


class QueryTextError(ValueError):
    """A `query` that cannot run as a subquery."""


def check_query(query: str) -> str:
    """The query without a trailing `;`; one with another `;` is refused (also one in a
    string literal: a limit of this check)."""
    text = query.strip().rstrip(";").strip()
    if not text:
        raise QueryTextError("is empty")
    if ";" in text:
        raise QueryTextError(
            "must be one statement without ';' (it runs as a subquery of the connector's "
            "own SELECT)"
        )
    return text


def spark_type(type_code: int, precision: int | None, scale: int | None) -> str | None:
    """The Spark type a column of this PostgreSQL type is read as; None: read as text."""
    if type_code == NUMERIC:
        if precision is not None and 0 < precision <= MAX_DECIMAL_PRECISION:
            return f"DECIMAL({precision},{max(scale or 0, 0)})"
        return None
    return _PLAIN_TYPES.get(type_code)


@dataclass(frozen=True)
class Column:
    """A column of a table's rows as the connector selects it: `as_text` when Spark has
    no type for it (json, uuid, arrays, unbounded numeric...)."""

    name: str
    spark_type: str
    as_text: bool = False


@dataclass(frozen=True)
class TableQueries:
    """The statements of one table (or one `query`) in one mode."""

    relation: tuple[str, ...] | str
    """A table's name parts, or a checked `query`."""
    mode: Mode
    incrementing: str | None
    timestamps: tuple[str, ...]
    delay_ms: int = 0

    def _relation(self) -> sql.Composable:
        if isinstance(self.relation, str):
            return sql.SQL("({}) AS {}").format(sql.SQL(self.relation), sql.Identifier(QUERY_ALIAS))
        return sql.Identifier(*self.relation)

    def _timestamp(self) -> sql.Composable:
        names = [sql.Identifier(name) for name in self.timestamps]
        if len(names) == 1:
            return names[0]
        return sql.SQL("COALESCE({})").format(sql.SQL(", ").join(names))

    def order_key(self) -> list[sql.Composable]:
        key: list[sql.Composable] = []
        if self.mode != "incrementing":
            key.append(self._timestamp())
        if uses_incrementing(self.mode):
            assert self.incrementing is not None
            key.append(sql.Identifier(self.incrementing))
        return key

    def _bounds(self, mark: Mark) -> list[sql.Composable]:
        bounds: list[sql.Composable] = []
        if self.mode != "incrementing":
            bounds.append(sql.Literal(instant(mark.timestamp_us)))
        if uses_incrementing(self.mode):
            bounds.append(sql.Literal(mark.incrementing))
        return bounds

    def _compare(self, operator: str, mark: Mark) -> sql.Composable:
        """`(key) <op> (mark)`, PostgreSQL's row comparison (lexicographic)."""
        return sql.SQL("({}) {} ({})").format(
            sql.SQL(", ").join(self.order_key()),
            sql.SQL(operator),
            sql.SQL(", ").join(self._bounds(mark)),
        )

    def _readable(self) -> sql.Composable:
        """Rows whose mark can be kept: incrementing >= 0, timestamp not before 1970."""
        conditions: list[sql.Composable] = []
        if self.mode != "incrementing":
            conditions.append(sql.SQL("{} >= {}").format(self._timestamp(), sql.Literal(EPOCH)))
        if uses_incrementing(self.mode):
            conditions.append(sql.SQL("{} >= 0").format(sql.Identifier(str(self.incrementing))))
        return sql.SQL(" AND ").join(conditions)

    def _after(self, mark: Mark | None) -> sql.Composable:
        if mark is None:
            return self._readable()
        return sql.SQL("{} AND {}").format(self._readable(), self._compare(">", mark))

    def describe(self) -> sql.Composable:
        """No rows: the columns and their types (`cursor.description`)."""
        return sql.SQL("SELECT * FROM {} LIMIT 0").format(self._relation())

    def next_mark(self, mark: Mark | None, limit: int) -> sql.Composable:
        """The order key of the last of the next `limit` rows after `mark` (no row: none)."""
        key = self.order_key()
        used = (uses_timestamp(self.mode), uses_incrementing(self.mode))
        aliases = [sql.Identifier(a) for a, u in zip(KEY_ALIASES, used, strict=True) if u]
        settled: sql.Composable = sql.SQL("")
        if self.mode != "incrementing" and self.delay_ms > 0:
            settled = sql.SQL(" AND {} < statement_timestamp() - {} * interval '1 millisecond'")
            settled = settled.format(self._timestamp(), sql.Literal(self.delay_ms))
        return sql.SQL(
            "SELECT {aliases} FROM (SELECT {selected} FROM {relation} WHERE {after}{settled} "
            "ORDER BY {key} LIMIT {limit}) AS sparkherd_batch ORDER BY {descending} LIMIT 1"
        ).format(
            aliases=sql.SQL(", ").join(aliases),
            selected=sql.SQL(", ").join(
                sql.SQL("{} AS {}").format(k, a) for k, a in zip(key, aliases, strict=True)
            ),
            relation=self._relation(),
            after=self._after(mark),
            settled=settled,
            key=sql.SQL(", ").join(key),
            limit=sql.Literal(limit),
            descending=sql.SQL(", ").join(sql.SQL("{} DESC").format(a) for a in aliases),
        )

    def rows(self, columns: tuple[Column, ...], start: Mark | None, end: Mark) -> sql.Composable:
        """The rows after `start` up to `end`, in order."""
        selected = [
            sql.SQL("{}::text").format(sql.Identifier(c.name))
            if c.as_text
            else sql.Identifier(c.name)
            for c in columns
        ]
        return sql.SQL("SELECT {} FROM {} WHERE {} AND {} ORDER BY {}").format(
            sql.SQL(", ").join(selected),
            self._relation(),
            self._after(start),
            self._compare("<=", end),
            sql.SQL(", ").join(self.order_key()),
        )


class ColumnsError(ValueError):
    """A table lacks a column the mode needs, or has one of the wrong type."""


def columns_of(
    table: str,
    described: Sequence[tuple[str, int, int | None, int | None]],
    queries: TableQueries,
    key_field: str | None,
) -> tuple[Column, ...]:
    """A table's columns as the connector reads them, from (name, type OID, precision,
    scale) as `describe` found them; `ColumnsError` names what is missing or wrong."""
    types = {name: type_code for name, type_code, _, _ in described}
    if len(types) != len(described):
        raise ColumnsError(f"{table!r} has two columns of one name; name them apart")
    stamps = "timestamp, timestamp with time zone or date"
    wanted: list[tuple[str, str, dict[int, str], str]] = [
        (name, "timestamp.column.name", TIMESTAMP_TYPES, stamps)
        for name in (queries.timestamps if queries.mode != "incrementing" else ())
    ]
    if queries.incrementing is not None and uses_incrementing(queries.mode):
        integers = "smallint, integer or bigint"
        wanted.append((queries.incrementing, "incrementing.column.name", INTEGER_TYPES, integers))
    for name, key, allowed, kinds in wanted:
        if name not in types:
            raise ColumnsError(
                f"{table!r} has no column {name!r} ({key}); its columns: {', '.join(types)}"
            )
        if types[name] not in allowed:
            raise ColumnsError(f"column {name!r} of {table!r} ({key}) must be {kinds}")
    if key_field is not None and key_field not in types:
        raise ColumnsError(f"{table!r} has no column {key_field!r} (key.field)")
    columns = []
    for name, type_code, precision, scale in described:
        known = spark_type(type_code, precision, scale)
        columns.append(Column(name, known or "STRING", as_text=known is None))
    return tuple(columns)
