"""The chain in a connector that writes Kafka (files-to-kafka, jdbc-to-kafka): applied to
each row's record before its key and value are encoded, as Connect applies a source
task's chain before its converters.

A row's record is the row as its value (the whole row, or its one column for a string or
bytes converter, as without a chain), the `key.field` column as its key (null without
one), the connector's topic, and no partition, offset, timestamp or headers yet. What the
chain leaves is encoded by the converters from its own types: a chain that makes a key or
reshapes the value is written as it made them. A routing transform decides each record's
topic; one routed to a topic of the worker's own fails the task, as does any record a
transform cannot handle (a source has no dead letter queue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql.types import DataType, NullType, StructType

from worker.plugins.api import ConfigProblem, ConnectorConfigError
from worker.plugins.internal_topics import internal_topics
from worker.records.converters.columns import encode, row_payload, top_level
from worker.records.converters.spec import RecordConverters
from worker.records.transforms.chain import TRANSFORM_ERROR, apply_chain
from worker.records.transforms.config import Chain
from worker.records.transforms.record import (
    HEADER_TYPE,
    HEADERS,
    KEY,
    TOPIC,
    VALUE,
    ChainContext,
    ChainProblem,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def chained_source_rows(
    rows: DataFrame,
    origin: Column,
    topic: str,
    key_field: str | None,
    converters: RecordConverters,
    chain: Chain,
    config: Mapping[str, str],
) -> DataFrame:
    """(origin, topic, key, value, headers) for the `sparkherd-kafka` sink: each row's
    record after the chain, encoded. `ConnectorConfigError` naming the setting when a
    stage cannot apply to the rows' types; `ConverterMismatchError` when a converter
    cannot write what the chain made."""
    from pyspark.sql import functions as f

    schema: StructType = rows.schema
    key = top_level(key_field) if key_field else f.lit(None)
    value, _ = row_payload(converters.value, schema)
    frame = rows.select(
        origin.alias("origin"),
        key.alias(KEY),
        value.alias(VALUE),
        f.lit(topic).alias(TOPIC),
        f.lit(None).cast("int").alias("partition"),
        f.lit(None).cast("long").alias("offset"),
        f.lit(None).cast("timestamp").alias("timestamp"),
        f.lit(None).cast(HEADER_TYPE).alias(HEADERS),
    )
    context = ChainContext(rows.sparkSession, frozenset(), False, internal_topics(config))
    try:
        chained = apply_chain(frame, chain, context)
    except ChainProblem as exc:
        raise ConnectorConfigError([ConfigProblem(exc.key, exc.message)]) from None
    error = f.col(TRANSFORM_ERROR)
    where = f.concat(f.lit(" failed on a record of "), f.col("origin"), f.lit(": "))
    reason = f.concat(error["alias"], where, error["message"])
    checked = chained.where(f.when(error.isNotNull(), f.raise_error(reason)).otherwise(f.lit(True)))
    return checked.select(
        f.col("origin"),
        f.col(TOPIC),
        _encoded(converters, KEY, chained.schema[KEY].dataType),
        _encoded(converters, VALUE, chained.schema[VALUE].dataType),
        f.coalesce(f.col(HEADERS), f.array().cast(HEADER_TYPE)).alias(HEADERS),
    )


def _encoded(converters: RecordConverters, part: str, data_type: DataType) -> Column:
    """A part as its converter writes it; a key no field or transform gave is null."""
    from pyspark.sql import functions as f

    if isinstance(data_type, NullType):
        return f.lit(None).cast("binary").alias(part)
    spec = converters.key if part == KEY else converters.value
    return encode(spec, f.col(part), data_type).alias(part)
