"""Kafka records read by a connector, through its converters: Spark's Kafka columns with
`key` and `value` decoded, and every record that could not be converted marked.

`decode_records` marks and never throws, keeping each record's original bytes beside
it: a dead letter queue (`errors.tolerance=all`) would route the marked records there.
`failing_on_errors` is `errors.tolerance=none`, Connect's default: the first marked
record fails the query with its topic, partition and offset in the message.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from aiokafka import TopicPartition
from pyspark.sql.types import DataType, StructField, StructType

from worker.kafka.client import FETCH_STALL_S, BlockingKafka, KafkaUnavailableError, Record
from worker.kafka.connection import KafkaConnection
from worker.records.converters.columns import decode, with_parses
from worker.records.converters.spec import ConverterSpec, RecordConverters, Side, schema_key

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ERROR_COLUMN: Final = "__sparkherd_conversion_error"
"""Null, or which side of the record could not be converted (and by what converter)."""
ORIGINAL_KEY: Final = "__sparkherd_original_key"
ORIGINAL_VALUE: Final = "__sparkherd_original_value"
ORIGINAL_HEADERS: Final = "__sparkherd_original_headers"
"""The record's headers, when its source read them (`headers`, as Spark's Kafka source
names them with `includeHeaders`): what a dead letter queue sends on."""
HEADERS_COLUMN: Final = "headers"
KAFKA_COLUMNS: Final = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestampType",
)
"""Spark's Kafka schema, which the `source` view keeps with key and value converted."""
SAMPLE_RECORD_MAX_BYTES: Final = 1 << 20
"""A key or value larger than this is not sampled to infer a type from (Kafka's default
`message.max.bytes` is about as much): parsing one, and inferring from it, takes the
start as long as the record is large."""
SAMPLE_MAX_BYTES: Final = 16 << 20
"""All the keys or values sampled together, at most."""
SAMPLE_WITHIN_S: Final = 30.0
"""How long sampling may take; what was read by then is the sample."""


class SampleUnavailableError(RuntimeError):
    """No key or value could be sampled: every one read was too large, or none came in
    time. The message names the setting that makes sampling unnecessary."""


@dataclass(frozen=True)
class PayloadTypes:
    """The Spark type each side decodes to (None: a json side whose type is not known)."""

    key: DataType | None
    value: DataType | None

    @property
    def known(self) -> bool:
        return self.key is not None and self.value is not None


def view_schema(kafka_schema: StructType, types: PayloadTypes) -> StructType:
    """Spark's Kafka schema with `key` and `value` of the converted types."""
    replaced = {"key": types.key, "value": types.value}
    return StructType(
        [
            StructField(field.name, replaced.get(field.name) or field.dataType, True)
            for field in kafka_schema.fields
        ]
    )


def decode_records(raw: DataFrame, converters: RecordConverters, types: PayloadTypes) -> DataFrame:
    """Spark's Kafka columns with key and value decoded, `ERROR_COLUMN`, and the
    original bytes as `ORIGINAL_KEY` / `ORIGINAL_VALUE` (and headers, when read, as
    `ORIGINAL_HEADERS`)."""
    from pyspark.sql import functions as f

    key = decode(converters.key, f.col("key"), types.key)
    value = decode(converters.value, f.col("value"), types.value)
    # Spark keeps the parses apart (it does not inline an expensive column read twice).
    raw = with_parses(raw, key, value)
    both = f"{_named(converters.key)} and {_named(converters.value)}"
    error = (
        f.when(key.failed & value.failed, f.lit(both))
        .when(key.failed, f.lit(_named(converters.key)))
        .when(value.failed, f.lit(_named(converters.value)))
    )
    others = [f.col(name) for name in KAFKA_COLUMNS if name not in ("key", "value")]
    return raw.select(
        key.value.alias("key"),
        value.value.alias("value"),
        *others,
        error.alias(ERROR_COLUMN),
        f.col("key").alias(ORIGINAL_KEY),
        f.col("value").alias(ORIGINAL_VALUE),
        *([f.col(HEADERS_COLUMN).alias(ORIGINAL_HEADERS)] if HEADERS_COLUMN in raw.columns else []),
    )


def _named(spec: ConverterSpec) -> str:
    return f"{spec.side} ({spec.key}={spec.kind})"


def failing_on_errors(decoded: DataFrame) -> DataFrame:
    """`errors.tolerance=none`: the view's columns, and the query fails at the first
    record that could not be converted, naming where it is."""
    from pyspark.sql import functions as f

    where: Column = f.concat(
        f.lit("Cannot convert the "),
        f.col(ERROR_COLUMN),
        f.lit(" of the record at topic "),
        f.col("topic"),
        f.lit(", partition "),
        f.col("partition").cast("string"),
        f.lit(", offset "),
        f.col("offset").cast("string"),
        f.lit(" (errors.tolerance=none)"),
    )
    checked = decoded.where(
        f.when(f.col(ERROR_COLUMN).isNotNull(), f.raise_error(where)).otherwise(f.lit(True))
    )
    return checked.select(*KAFKA_COLUMNS)


def first_records(
    connection: KafkaConnection,
    partitions: Sequence[TopicPartition],
    side: Side,
    limit: int,
    within_s: float = SAMPLE_WITHIN_S,
) -> list[bytes]:
    """Up to `limit` non-null keys or values from the start of `partitions`: what a json
    payload's type is inferred from when a task first starts. Bounded: one larger than
    `SAMPLE_RECORD_MAX_BYTES` is passed over, and reading stops at `SAMPLE_MAX_BYTES` or
    after `within_s` with what it has; one that has nothing for either reason raises
    `SampleUnavailableError` rather than pass for an empty topic."""
    found: list[bytes] = []
    passed_over = 0
    deadline = time.monotonic() + within_s
    with connection.open("sparkherd-converter-sample") as kafka:
        starts = kafka.beginning_offsets(partitions)
        ends = kafka.end_offsets(partitions)
        for tp in partitions:
            end = min(ends[tp], starts[tp] + limit)
            for chunk in _chunks(kafka, tp, starts[tp], end, deadline):
                payloads = [r.key if side == "key" else r.value for r in chunk]
                kept = [p for p in payloads if p is not None and len(p) <= SAMPLE_RECORD_MAX_BYTES]
                passed_over += sum(p is not None for p in payloads) - len(kept)
                found += kept
                if len(found) >= limit or sum(map(len, found)) >= SAMPLE_MAX_BYTES:
                    return found[:limit]
    if not found and passed_over:
        raise SampleUnavailableError(
            f"the first {passed_over} {side}s of the task's partitions are larger than "
            f"{SAMPLE_RECORD_MAX_BYTES} bytes each, too large to infer the {side}'s type "
            f"from: set {schema_key(side)} (a DDL such as `id LONG, name STRING`)"
        )
    if not found and time.monotonic() >= deadline:
        raise SampleUnavailableError(
            f"no {side} could be read to infer its type from within {within_s:g} s: set "
            f"{schema_key(side)} (a DDL such as `id LONG, name STRING`)"
        )
    return found


def _chunks(
    kafka: BlockingKafka, tp: TopicPartition, start: int, end: int, deadline: float
) -> Iterator[list[Record]]:
    """The partition's records in [start, end) that come before `deadline`."""
    try:
        for chunk in kafka.fetch(tp, start, end, min(FETCH_STALL_S, deadline - time.monotonic())):
            yield chunk
            if time.monotonic() >= deadline:
                return
    except KafkaUnavailableError:
        if time.monotonic() < deadline:
            raise
