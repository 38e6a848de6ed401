"""The SQL kafka-to-jdbc sends to PostgreSQL, as text built here without a database.

Every name in a statement comes from outside (a topic, a record's field, a user's
`table.name.format`) and is treated as hostile: it is always quoted as PostgreSQL quotes
an identifier (in double quotes, a double quote doubled), which makes any text one name
and nothing else, and it is checked first for what PostgreSQL would not keep as written
(a NUL, more than 63 bytes, which PostgreSQL would silently truncate into another
table's name). Values never appear in the text: they go as parameters or through COPY.

A batch reaches a table through a temporary staging table (`stage_*`) that COPY fills,
from which one statement per mode applies it; only an insert without deletes COPYs into
the table itself. The staging statements keep, of several records with one key, the
last one (`DISTINCT ON` by key, latest `SEQ_COLUMN` first): a batch applied at once means
what its records applied one by one in offset order would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

InsertMode = Literal["insert", "upsert", "update"]

MAX_IDENTIFIER_BYTES: Final = 63
"""PostgreSQL's NAMEDATALEN - 1: a longer name is cut short without an error."""
TOPIC_VARIABLE: Final = "${topic}"
SEQ_COLUMN: Final = "__sparkherd_seq"
"""The staging table's record order within the batch (offset order)."""
TOMBSTONE_COLUMN: Final = "__sparkherd_tombstone"
"""Whether the staged record is a tombstone (a key with a null value)."""


class IdentifierError(ValueError):
    """A name PostgreSQL would not keep as written."""


def quote(name: str) -> str:
    """`name` as one PostgreSQL identifier, whatever it holds."""
    if not name:
        raise IdentifierError("an empty name")
    if "\x00" in name:
        raise IdentifierError(f"{name!r} holds a NUL character")
    if len(name.encode()) > MAX_IDENTIFIER_BYTES:
        raise IdentifierError(
            f"{name!r} is longer than PostgreSQL's {MAX_IDENTIFIER_BYTES} bytes for a name"
        )
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class TableName:
    """A table, in a schema or (`schema` None) wherever the connection's search_path
    finds or creates it."""

    name: str
    schema: str | None = None

    def sql(self) -> str:
        return (
            self.name_sql() if self.schema is None else f"{quote(self.schema)}.{quote(self.name)}"
        )

    def name_sql(self) -> str:
        return quote(self.name)

    def __str__(self) -> str:
        return self.sql()


def table_for(name_format: str, topic: str) -> TableName:
    """The table `table.name.format` names for `topic`: `${topic}` is replaced by the
    topic, and a dot outside it separates a schema from the table (`sales.${topic}`); a
    topic's own dots stay in the name (`a.b` is the table `"a.b"`)."""
    parts = name_format.split(".")
    if len(parts) > 2:
        raise IdentifierError(f"{name_format!r} has more than one dot: write table or schema.table")
    names = [part.replace(TOPIC_VARIABLE, topic) for part in parts]
    for name in names:
        quote(name)
    return TableName(names[-1], names[0] if len(names) == 2 else None)


def column_list(columns: Sequence[str]) -> str:
    return ", ".join(quote(c) for c in columns)


@dataclass(frozen=True)
class NewColumn:
    name: str
    type: str
    """A PostgreSQL type, from `jdbc_types` (never from outside)."""
    nullable: bool = True

    def sql(self) -> str:
        return f"{quote(self.name)} {self.type}" + ("" if self.nullable else " NOT NULL")


def create_table(table: TableName, columns: Sequence[NewColumn], key: Sequence[str]) -> str:
    """`CREATE TABLE IF NOT EXISTS`, with the key as its primary key (if any): two tasks
    may create it at once."""
    parts = [c.sql() for c in columns]
    if key:
        parts.append(f"PRIMARY KEY ({column_list(key)})")
    return f"CREATE TABLE IF NOT EXISTS {table.sql()} ({', '.join(parts)})"


def add_columns(table: TableName, columns: Sequence[NewColumn]) -> str:
    """`auto.evolve`: each new column nullable (rows already there have no value)."""
    added = ", ".join(f"ADD COLUMN IF NOT EXISTS {quote(c.name)} {c.type}" for c in columns)
    return f"ALTER TABLE {table.sql()} {added}"


def table_columns_query() -> str:
    """The columns of the table whose quoted name is the parameter (resolved as the
    connection's search_path resolves it): name, type, NOT NULL; no row if no table."""
    return (
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull "
        "FROM pg_attribute a WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 "
        "AND NOT a.attisdropped ORDER BY a.attnum"
    )


def table_exists_query() -> str:
    return "SELECT to_regclass(%s) IS NOT NULL"


def stage_name(index: int) -> TableName:
    return TableName(f"sparkherd_stage_{index}")


def create_stage(stage: TableName, table: TableName, columns: Sequence[str]) -> str:
    """A temporary table with the table's column types (so COPY converts as into the
    table) and none of its constraints, dropped at the end of the transaction."""
    return (
        f"CREATE TEMPORARY TABLE {stage.sql()} ON COMMIT DROP AS SELECT {column_list(columns)}, "
        f"0::bigint AS {quote(SEQ_COLUMN)}, false AS {quote(TOMBSTONE_COLUMN)} "
        f"FROM {table.sql()} WITH NO DATA"
    )


def copy_into(table: TableName, columns: Sequence[str]) -> str:
    return f"COPY {table.sql()} ({column_list(columns)}) FROM STDIN (FORMAT csv)"


def truncate(table: TableName) -> str:
    return f"TRUNCATE {table.sql()}"


def _latest(stage: TableName, key: Sequence[str], columns: Sequence[str]) -> str:
    """The last staged record of each key."""
    keys = column_list(key)
    return (
        f"(SELECT DISTINCT ON ({keys}) {column_list(columns)}, {quote(TOMBSTONE_COLUMN)} "
        f"FROM {stage.sql()} ORDER BY {keys}, {quote(SEQ_COLUMN)} DESC) AS latest"
    )


def _key_match(table: TableName, key: Sequence[str], other: str) -> str:
    return " AND ".join(f"{table.sql()}.{quote(k)} = {other}.{quote(k)}" for k in key)


def apply_statements(
    mode: InsertMode,
    table: TableName,
    stage: TableName,
    key: Sequence[str],
    columns: Sequence[str],
    deletes: bool,
) -> list[str]:
    """What applies the staged records to the table, in order. `columns` are all the
    staged columns (the key's among them); `deletes`: tombstones delete their key's row.
    A mode other than insert needs a key."""
    values = [c for c in columns if c not in key]
    cols = column_list(columns)
    latest = _latest(stage, key, columns) if key else ""
    tombstone = quote(TOMBSTONE_COLUMN)
    statements: list[str] = []
    if deletes:
        if mode == "insert":
            doomed = (
                f"(SELECT DISTINCT {column_list(key)} FROM {stage.sql()} WHERE {tombstone}) "
                "AS latest"
            )
        else:
            doomed = latest
        statements.append(
            f"DELETE FROM {table.sql()} USING {doomed} WHERE "
            + ("" if mode == "insert" else f"latest.{tombstone} AND ")
            + _key_match(table, key, "latest")
        )
    if mode == "insert":
        later_tombstone = (
            f" AND NOT EXISTS (SELECT 1 FROM {stage.sql()} AS t WHERE t.{tombstone} AND "
            f"t.{quote(SEQ_COLUMN)} > s.{quote(SEQ_COLUMN)} AND "
            + " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in key)
            + ")"
            if deletes
            else ""
        )
        statements.append(
            f"INSERT INTO {table.sql()} ({cols}) SELECT {cols} FROM {stage.sql()} AS s "
            f"WHERE NOT s.{tombstone}{later_tombstone} ORDER BY s.{quote(SEQ_COLUMN)}"
        )
    elif mode == "upsert":
        action = (
            "DO UPDATE SET " + ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in values)
            if values
            else "DO NOTHING"
        )
        statements.append(
            f"INSERT INTO {table.sql()} ({cols}) SELECT {cols} FROM {latest} "
            f"WHERE NOT latest.{tombstone} ON CONFLICT ({column_list(key)}) {action}"
        )
    elif values:
        statements.append(
            f"UPDATE {table.sql()} SET "
            + ", ".join(f"{quote(c)} = latest.{quote(c)}" for c in values)
            + f" FROM {latest} WHERE NOT latest.{tombstone} AND "
            + _key_match(table, key, "latest")
        )
    return statements
