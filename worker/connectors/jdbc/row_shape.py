"""Which table columns a batch of records makes, and of which PostgreSQL types, decided
from the batch's Spark schema alone, as Confluent's JDBC sink decides them from a
record's Connect schema.

A record's value is a struct whose fields are columns. `pk.mode` says where the primary
key comes from: `none` (no key), `record_key` (the key's fields, or a key that is not a
struct as one column named by `pk.fields`, `__connect_key` by default) or `record_value`
(value fields named by `pk.fields`, all of them by default). With `record_key`, a value
field named like a key column is left out: the key's value wins. `topic`, `partition`
and `offset` name each record in errors, so the rows must keep them.

Types follow Confluent's PostgreSQL dialect, except that Spark's `TIMESTAMP` (an
instant) becomes `TIMESTAMPTZ` and `TIMESTAMP_NTZ` (a wall-clock time) `TIMESTAMP`; a
struct, array or map is written as JSON into `JSONB`. A field the batch declares NOT
NULL is NOT NULL in a created table (as a required field of a Connect schema is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from worker.connectors.jdbc.sql import IdentifierError, NewColumn, quote

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

PkMode = Literal["none", "record_key", "record_value"]
Encoding = Literal["plain", "json", "hex"]
"""How a column's values are written for COPY: as they are, as JSON text, as bytea's
`\\x` hex text."""

DEFAULT_KEY_COLUMN: Final = "__connect_key"
"""Confluent's name for a key that is not a struct, when `pk.fields` names none."""
RECORD_COLUMNS: Final = ("topic", "partition", "offset")


class RowShapeError(ValueError):
    """The batch's rows cannot make table rows under the connector's keys."""


@dataclass(frozen=True)
class SinkColumn:
    name: str
    """The table column's name."""
    side: Literal["key", "value"]
    field: str | None
    """The key's or value's field it is read from; None: the key itself."""
    pg_type: str
    nullable: bool
    encoding: Encoding

    def new_column(self, key: bool) -> NewColumn:
        return NewColumn(self.name, self.pg_type, self.nullable and not key)


@dataclass(frozen=True)
class RowShape:
    columns: tuple[SinkColumn, ...]
    key: tuple[str, ...]
    """The primary key's columns (none with `pk.mode=none`)."""

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def new_columns(self) -> list[NewColumn]:
        return [c.new_column(c.name in self.key) for c in self.columns]


def postgres_type(data_type: DataType) -> tuple[str, Encoding] | None:
    """The PostgreSQL type a Spark type is written as, None when it is not written."""
    from pyspark.sql import types as t

    plain: list[tuple[type[DataType], str]] = [
        (t.ByteType, "SMALLINT"),
        (t.ShortType, "SMALLINT"),
        (t.IntegerType, "INTEGER"),
        (t.LongType, "BIGINT"),
        (t.FloatType, "REAL"),
        (t.DoubleType, "DOUBLE PRECISION"),
        (t.BooleanType, "BOOLEAN"),
        (t.StringType, "TEXT"),
        (t.NullType, "TEXT"),
        (t.DateType, "DATE"),
        (t.TimestampType, "TIMESTAMPTZ"),
        (t.TimestampNTZType, "TIMESTAMP"),
    ]
    for spark, postgres in plain:
        if isinstance(data_type, spark):
            return postgres, "plain"
    if isinstance(data_type, t.DecimalType):
        return f"NUMERIC({data_type.precision},{data_type.scale})", "plain"
    if isinstance(data_type, t.BinaryType):
        return "BYTEA", "hex"
    if isinstance(data_type, t.StructType | t.ArrayType | t.MapType):
        return "JSONB", "json"
    return None


def _column(
    name: str, side: Literal["key", "value"], field: str | None, data_type: DataType, nullable: bool
) -> SinkColumn:
    mapped = postgres_type(data_type)
    where = f"{side}.{field}" if field is not None else side
    if mapped is None:
        raise RowShapeError(
            f"{where} is of type {data_type.simpleString()}, which kafka-to-jdbc does not "
            "write (make it another type in transform.sql)"
        )
    try:
        quote(name)
    except IdentifierError as exc:
        raise RowShapeError(f"{where} cannot be a column: {exc}") from None
    return SinkColumn(name, side, field, mapped[0], nullable, mapped[1])


def row_shape(schema: StructType, pk_mode: PkMode, pk_fields: Sequence[str]) -> RowShape:
    """The table columns of rows of `schema` (see the module docstring)."""
    from pyspark.sql.types import StructType

    fields = {f.name: f for f in schema.fields}
    missing = [name for name in ("value", *RECORD_COLUMNS) if name not in fields]
    if pk_mode == "record_key" and "key" not in fields:
        missing.insert(0, "key")
    if missing:
        raise RowShapeError(
            f"the rows have no {', '.join(missing)} column: kafka-to-jdbc writes the fields "
            "of `value` and names records by topic, partition and offset, so a "
            "transform.sql must keep them"
        )
    value = fields["value"].dataType
    if not isinstance(value, StructType):
        raise RowShapeError(
            f"the value is {value.simpleString()}, not a struct: kafka-to-jdbc writes a "
            "value's fields as columns (JSON with a schema, value.schema or Avro records, "
            "or a struct made in transform.sql)"
        )
    _refuse_twice([f.name for f in value.fields], "the value")
    key_columns: list[SinkColumn] = []
    if pk_mode == "record_key":
        key_columns = _key_columns(fields["key"].dataType, pk_fields)
        key_names = [c.name for c in key_columns]
    elif pk_mode == "record_value":
        names = [f.name for f in value.fields]
        key_names = list(pk_fields) or names
        absent = [name for name in key_names if name not in names]
        if absent:
            raise RowShapeError(f"pk.fields names {', '.join(absent)}, not in the value")
    else:
        key_names = []
    value_columns = [
        _column(f.name, "value", f.name, f.dataType, f.nullable)
        for f in value.fields
        if not (pk_mode == "record_key" and f.name in key_names)
    ]
    columns = (*key_columns, *value_columns)
    if not columns:
        raise RowShapeError("the records have no field to write")
    return RowShape(columns, tuple(key_names))


def _key_columns(key: DataType, pk_fields: Sequence[str]) -> list[SinkColumn]:
    from pyspark.sql.types import StructType

    if not isinstance(key, StructType):
        if len(pk_fields) > 1:
            raise RowShapeError(
                f"the key is {key.simpleString()}, one column: pk.fields may name only one"
            )
        name = pk_fields[0] if pk_fields else DEFAULT_KEY_COLUMN
        return [_column(name, "key", None, key, False)]
    names = [f.name for f in key.fields]
    _refuse_twice(names, "the key")
    chosen = list(pk_fields) or names
    absent = [name for name in chosen if name not in names]
    if absent:
        raise RowShapeError(f"pk.fields names {', '.join(absent)}, not in the key")
    by_name = {f.name: f for f in key.fields}
    return [_column(name, "key", name, by_name[name].dataType, False) for name in chosen]


def _refuse_twice(names: Sequence[str], where: str) -> None:
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise RowShapeError(f"{where} has more than one field named {', '.join(twice)}")


def missing_columns(shape: RowShape, table: Sequence[str]) -> list[SinkColumn]:
    """The shape's columns the table lacks (names compare exactly: they are quoted)."""
    present = set(table)
    return [c for c in shape.columns if c.name not in present]
