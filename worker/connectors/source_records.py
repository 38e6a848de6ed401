"""What a source connector publishes for a row of its input, and how: the key and the
value as the connector's converters write them, and the settings of publishing each row
once (files-to-kafka, jdbc-to-kafka)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from pydantic import BaseModel, ConfigDict, Field

from worker.kafka.sink import TRANSACTION_TIMEOUT_MS
from worker.kafka.transactions import ExactlyOnceSupport
from worker.plugins.api import JAVA_INT_MAX
from worker.records.converters.columns import encode, row_payload, top_level
from worker.records.converters.spec import RecordConverters
from worker.records.transforms.config import parse_chain
from worker.records.transforms.source_chain import chained_source_rows

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

CONVERTER_DEFAULTS: Final = {
    "key.converter": "string",
    "value.converter": "json",
    "value.converter.schemas.enable": "false",
}
"""A row's key as a string and the row as plain JSON: what files-to-kafka wrote before
it had converters, and what Confluent's JDBC source writes with the JsonConverter
without schemas."""


class PublishOnceSettings(BaseModel):
    """The keys of the `sparkherd-kafka` sink's exactly-once publishing
    (`worker.kafka.spark_io.publish_once`): a base for a source connector's model."""

    model_config = ConfigDict(frozen=True)

    exactly_once_support: ExactlyOnceSupport = Field(
        default="requested",
        alias="exactly.once.support",
        description="`requested`: Kafka transactions where the broker has them, the sink's "
        "duplicate check otherwise; `required`: the task fails on a broker without them",
    )
    transaction_timeout_ms: int = Field(
        default=TRANSACTION_TIMEOUT_MS,
        alias="transaction.timeout.ms",
        ge=1000,
        le=JAVA_INT_MAX,
        description="How long one partition of a batch may take to publish; at most the "
        "broker's transaction.max.timeout.ms",
    )


def encoded_row(
    schema: StructType, key_field: str | None, converters: RecordConverters
) -> tuple[Column, Column]:
    """The key (the `key_field` column, or null) and the value (the whole row, or its one
    column) of a row of `schema`; `ConverterMismatchError` when a converter cannot write
    what the rows hold."""
    from pyspark.sql import functions as f

    key = f.lit(None)
    if key_field:
        key = encode(converters.key, top_level(key_field), schema[key_field].dataType)
    return key, encode(converters.value, *row_payload(converters.value, schema))


def published_rows(
    rows: DataFrame,
    origin: Column,
    topic: str,
    key_field: str | None,
    converters: RecordConverters,
    config: Mapping[str, str],
) -> DataFrame:
    """(origin, topic, key, value) for the `sparkherd-kafka` sink: each row encoded, or,
    with a `transforms` chain in `config`, each row's record as the chain leaves it (with
    its headers and the topic it routes it to; `worker.records.transforms.source_chain`).
    `ConverterMismatchError` when a converter cannot write what the rows hold."""
    from pyspark.sql import functions as f

    chain = parse_chain(config)
    if chain:
        return chained_source_rows(rows, origin, topic, key_field, converters, chain, config)
    key, value = encoded_row(rows.schema, key_field, converters)
    return rows.select(
        origin.alias("origin"), f.lit(topic).alias("topic"), key.alias("key"), value.alias("value")
    )
