"""The same records through Connect's transform chain (the oracle, `connect_oracle`) and
through sparkherd's (`worker.records.transforms.chain`, in a real Spark), compared record
by record: dropped by both, failed by both, or the same topic, partition, timestamp,
headers (as the bytes Connect's default header converter writes), key and value, and the
Spark type of each (to Connect's schema, as far as Spark types carry one).

A chain is given as a connector config's keys (`transforms`, `transforms.<alias>.*`,
`predicates`, ...); the oracle gets each alias's class and settings from them. Records
are the oracle's `Record`s; a side without a schema (Connect's schemaless data) needs the
Spark type sparkherd would read it as (`key_type`/`value_type`), a schema'd side's comes
from its schema. Headers go in as Kafka's bytes (`headers` of (name, bytes) pairs): Connect
gets them as strings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from py4j.protocol import Py4JJavaError
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from tests.support.connect_oracle import ConnectOracle, Record, Spec, Stage
from worker.records.transforms.chain import TRANSFORM_ERROR, apply_chain
from worker.records.transforms.config import aliases, parse_chain
from worker.records.transforms.record import HEADER_TYPE, ChainContext, Part

PRIMITIVES: Final[Mapping[str, DataType]] = {
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float": FloatType(),
    "float32": FloatType(),
    "double": DoubleType(),
    "float64": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
    "bytes": BinaryType(),
}
FRAMEWORK: Final = ("type", "predicate", "negate")
DROPPED: Final = "dropped"
FAILED: Final = "failed"
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def spark_type(spec: Spec) -> DataType:
    """The Spark type sparkherd reads a value of Connect schema `spec` as."""
    name = spec.get("name")
    if name == "org.apache.kafka.connect.data.Decimal":
        parameters = spec.get("parameters") or {}
        precision = int(parameters.get("connect.decimal.precision", 38))
        return DecimalType(precision, int(parameters["scale"]))
    if name == "org.apache.kafka.connect.data.Date":
        return DateType()
    if name == "org.apache.kafka.connect.data.Timestamp":
        return TimestampType()
    kind = spec["type"]
    if kind == "array":
        return ArrayType(spark_type(spec["items"]))
    if kind == "map":
        return MapType(spark_type(spec["keys"]), spark_type(spec["values"]))
    if kind == "struct":
        return StructType([StructField(f["field"], spark_type(f)) for f in spec["fields"]])
    return PRIMITIVES[kind]


@dataclass(frozen=True)
class Outcome:
    """One record after a chain: dropped, failed, or what it became."""

    kind: str
    topic: str | None = None
    partition: int | None = None
    timestamp: int | None = None
    key: object = None
    value: object = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    types: Mapping[str, str] = field(default_factory=dict, compare=False)
    """The Spark type of key and value (schema'd sides only), as simple strings: compared
    where both chains have one and the value is not null (Connect has no schema for a
    null without one, and may give a null another schema than its stream's other
    records, where a Spark column has one type for all)."""
    names: Mapping[str, Mapping[str, object]] = field(default_factory=dict, compare=False)
    """Connect's schema name and version per side; sparkherd's column metadata
    (`connect.name`, `connect.version`), which SetSchemaMetadata sets."""


def connect_chain(oracle: ConnectOracle, config: Mapping[str, str]) -> list[Stage]:
    def configured(kind: str, alias: str) -> Any:
        prefix = f"{kind}.{alias}."
        settings = {
            k[len(prefix) :]: v
            for k, v in config.items()
            if k.startswith(prefix) and k[len(prefix) :] not in FRAMEWORK
        }
        return oracle.transformation(config[f"{prefix}type"], settings)

    predicates = {alias: configured("predicates", alias) for alias in aliases(config, "predicates")}
    stages = []
    for alias in aliases(config, "transforms"):
        named = config.get(f"transforms.{alias}.predicate")
        negate = config.get(f"transforms.{alias}.negate", "false").lower() == "true"
        stages.append(Stage(configured("transforms", alias), predicates.get(named or ""), negate))
    return stages


def through_connect(oracle: ConnectOracle, config: Mapping[str, str], record: Record) -> Outcome:
    try:
        out = oracle.apply(connect_chain(oracle, config), record)
    except Py4JJavaError:
        return Outcome(FAILED)
    if out is None:
        return Outcome(DROPPED)
    types = {
        side: spark_type(schema).simpleString()
        for side, schema in (("key", out.key_schema), ("value", out.value_schema))
        if schema is not None
    }
    schemaless = {
        side for side, s in (("key", out.key_schema), ("value", out.value_schema)) if s is None
    }
    return Outcome(
        "record",
        out.topic,
        out.partition,
        out.timestamp,
        normal(out.key, "key" in schemaless),
        normal(out.value, "value" in schemaless),
        tuple((k, oracle.header_bytes(s, v)) for k, s, v in out.headers),
        types,
    )


def through_sparkherd(
    spark: SparkSession,
    config: Mapping[str, str],
    records: Sequence[Record],
    key_type: DataType,
    value_type: DataType,
    schemaless: frozenset[Part],
) -> list[Outcome]:
    schema = StructType(
        [
            StructField("key", key_type),
            StructField("value", value_type),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
            StructField("headers", HEADER_TYPE),
        ]
    )
    rows = [
        (
            r.key,
            r.value,
            r.topic,
            r.partition,
            r.offset,
            None if r.timestamp is None else EPOCH + timedelta(milliseconds=r.timestamp),
            [(k, str(v).encode()) for k, _, v in r.headers],
        )
        for r in records
    ]
    frame = spark.createDataFrame(rows, schema)
    out = apply_chain(frame, parse_chain(config), ChainContext(spark, schemaless))
    by_offset = {row["offset"]: row for row in out.collect()}
    types = {part: out.schema[part].dataType.simpleString() for part in ("key", "value")}
    names = {part: out.schema[part].metadata for part in ("key", "value")}
    return [_outcome(by_offset.get(r.offset), types, names, schemaless) for r in records]


def _outcome(
    row: Row | None,
    types: Mapping[str, str],
    names: Mapping[str, Mapping[str, object]],
    schemaless: frozenset[Part],
) -> Outcome:
    if row is None:
        return Outcome(DROPPED)
    if row[TRANSFORM_ERROR] is not None:
        return Outcome(FAILED)
    stamp = row["timestamp"]
    return Outcome(
        "record",
        row["topic"],
        row["partition"],
        None if stamp is None else (stamp.replace(tzinfo=UTC) - EPOCH) // timedelta(milliseconds=1),
        _python(row["key"]),
        _python(row["value"]),
        tuple(
            (h["key"], None if h["value"] is None else bytes(h["value"]))
            for h in row["headers"] or ()
        ),
        {part: t for part, t in types.items() if part not in schemaless},
        {part: metadata for part, metadata in names.items() if metadata},
    )


def _python(value: object) -> object:
    if isinstance(value, Row):
        return {k: _python(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_python(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC)
    return value


def normal(value: object, schemaless: bool) -> object:
    """A value as compared: NaN equal to NaN; without a schema, a map's null entries
    left out (Connect's map may lack a key that a Spark struct holds as null)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {
            k: normal(v, schemaless) for k, v in value.items() if not (schemaless and v is None)
        }
    if isinstance(value, list | tuple):
        return [normal(v, schemaless) for v in value]
    return value


def normalised(outcome: Outcome, connect: Outcome) -> Outcome:
    """`outcome` as compared with Connect's `connect`: where Connect's side has no schema
    (a map, or a tombstone), null entries do not count."""
    return replace(
        outcome,
        key=normal(outcome.key, "key" not in connect.types),
        value=normal(outcome.value, "value" not in connect.types),
    )


def compare(
    oracle: ConnectOracle,
    spark: SparkSession,
    config: Mapping[str, str],
    records: Sequence[Record],
    *,
    key_type: DataType | None = None,
    value_type: DataType | None = None,
    connect_config: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """Both chains' outcomes for `records`, asserted equal; sparkherd's returned.
    `connect_config`: Connect's chain where it is configured otherwise than sparkherd's
    (a setting sparkherd reads as another that Connect has)."""
    key_spec = next((r.key_schema for r in records if r.key_schema is not None), None)
    value_spec = next((r.value_schema for r in records if r.value_schema is not None), None)
    sides: tuple[tuple[Part, Spec | None], ...] = (("key", key_spec), ("value", value_spec))
    schemaless = frozenset(side for side, spec in sides if spec is None)
    key = key_type or (spark_type(key_spec) if key_spec else StringType())
    value = value_type or (spark_type(value_spec) if value_spec else StringType())
    ours = through_sparkherd(spark, config, records, key, value, schemaless)
    theirs = [through_connect(oracle, connect_config or config, record) for record in records]
    for record, mine, connect in zip(records, ours, theirs, strict=True):
        where = f"offset {record.offset}"
        assert normalised(mine, connect) == normalised(connect, connect), (
            f"{where}: sparkherd {mine} != Connect {connect}"
        )
        for side in set(mine.types) & set(connect.types):
            if getattr(connect, side) is None:
                continue  # a null's schema: Spark has one type for a column's every row
            assert mine.types[side] == connect.types[side], f"{where}: the {side}'s type"
        for side, metadata in mine.names.items():
            if side in connect.names:
                named = {k: connect.names[side][k] for k in metadata}
                assert metadata == named, f"{where}: the {side}'s schema name and version"
    return ours
