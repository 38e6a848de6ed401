"""What a transform or predicate is given and what it gives back, as Spark columns.

A stage reads the record's parts (`Record`: key, value, topic, partition, offset,
timestamp, headers, and the Spark types of key and value) and answers a `Change`: new
columns for the parts it changes, and per record why it could not transform it (an
`error`, which follows `errors.tolerance`) or that it drops it. Connect decides per record
what a transform does; here what depends on the record's type is decided once, when the
chain is built (every record of a query has the key's and the value's one Spark type),
and what depends on its values is a column. A transform that cannot apply to the type at
all raises `ChainProblem` (a 400 when the type is known at create, else a task that
fails as it starts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, Literal

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    StringType,
    StructField,
    StructType,
)

from worker.records.transforms.config import Configured

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

Part = Literal["key", "value"]
KEY: Final = "key"
VALUE: Final = "value"
TOPIC: Final = "topic"
PARTITION: Final = "partition"
OFFSET: Final = "offset"
TIMESTAMP: Final = "timestamp"
HEADERS: Final = "headers"
HEADER_TYPE: Final = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
"""Spark's Kafka headers: (key, value bytes) pairs in order, a key possibly repeated."""


class ChainProblem(ValueError):
    """A stage cannot apply to the records' types (or a setting is wrong for them); `key`
    names the setting, as a `ConfigProblem` would."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message
        super().__init__(f"{key}: {message}")


@dataclass(frozen=True)
class ChainContext:
    """What the records are, beyond their columns."""

    spark: SparkSession
    schemaless: frozenset[Part] = frozenset()
    """Sides Connect would see without a schema (JsonConverter with
    `schemas.enable=false`): a few transforms write other types there (InsertField's
    timestamp is epoch milliseconds without a schema, a Timestamp with one)."""
    read_from_kafka: bool = True
    """Sink records: they have an offset (InsertField's `offset.field` needs one)."""
    internal_topics: frozenset[str] = frozenset()
    """The worker's own topics, which no routed record may name."""


@dataclass(frozen=True)
class Record:
    """The parts of the records a stage reads: columns of the frame before it."""

    key_type: DataType
    value_type: DataType

    def type_of(self, part: Part) -> DataType:
        return self.key_type if part == KEY else self.value_type


@dataclass(frozen=True)
class Change:
    """What a stage makes of each record; None leaves a part as it was."""

    key: Column | None = None
    value: Column | None = None
    topic: Column | None = None
    headers: Column | None = None
    error: Column | None = None
    """Null, or why this record cannot be transformed (a string column)."""
    drop: Column | None = None
    """True where the record leaves the chain (a boolean column)."""
    metadata: Mapping[Part, Mapping[str, object]] = field(default_factory=dict)
    """Schema metadata (a name, a version) to put on a part's column."""

    def parts(self) -> dict[str, Column]:
        changed = {KEY: self.key, VALUE: self.value, TOPIC: self.topic, HEADERS: self.headers}
        return {part: column for part, column in changed.items() if column is not None}


def on(part: Part, column: Column, error: Column | None = None) -> Change:
    """A change of the key or the value."""
    return replace(Change(error=error), **{part: column})


def side(configured: Configured) -> Part:
    """The part a `$Key`/`$Value` class works on."""
    return KEY if configured.plugin.side == "Key" else VALUE


def describe(data_type: DataType) -> str:
    return str(data_type.simpleString())


def struct_of(configured: Configured, record: Record, part: Part) -> StructType:
    """The part's type, which the class needs to be a struct."""
    found = record.type_of(part)
    if not isinstance(found, StructType):
        raise ChainProblem(
            configured.key("type"),
            f"{configured.plugin.simple_name} needs a struct {part} (a Connect Struct or a "
            f"JSON object); the {part} is {describe(found)}",
        )
    return found


def field_of(configured: Configured, struct: StructType, name: str, setting: str) -> StructField:
    """A field the setting names, which the struct must have."""
    for candidate in struct.fields:
        if candidate.name == name:
            return candidate
    raise ChainProblem(
        configured.key(setting),
        f"no field {name!r} in the records' struct (fields: {', '.join(struct.fieldNames())})",
    )


def null_error(part: Part, purpose: str) -> Column:
    """Connect's error for a transform that needs a struct and finds a null key or value
    (a tombstone, say)."""
    from pyspark.sql import functions as f

    return f.when(f.col(part).isNull(), f.lit(f"the {part} is null: no fields for {purpose}"))


def first_error(*errors: Column | None) -> Column | None:
    from pyspark.sql import functions as f

    present = [e for e in errors if e is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else f.coalesce(*present)
