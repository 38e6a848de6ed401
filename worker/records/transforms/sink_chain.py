"""The chain in a connector that reads Kafka: after the converters, before
`transform.sql`, so the `source` view shows the records as the chain left them.

A record a converter could not read passes the chain untouched (its conversion error is
what its error handling sees); one the chain fails carries `TRANSFORM_ERROR`, which
`worker.records.errors` turns into a failed task (`errors.tolerance=none`) or a dead
letter queue record of stage TRANSFORMATION (`all`). Without a `transforms` key the
records pass exactly as they did before chains existed: no column is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from worker.plugins.api import ConfigProblem, ConnectorConfigError
from worker.plugins.internal_topics import internal_topics
from worker.records.converters.records import ERROR_COLUMN, ORIGINAL_HEADERS, PayloadTypes
from worker.records.converters.spec import RecordConverters
from worker.records.transforms.chain import apply_chain, with_headers
from worker.records.transforms.config import Chain, parse_chain
from worker.records.transforms.record import (
    HEADER_TYPE,
    HEADERS,
    KEY,
    VALUE,
    ChainContext,
    ChainProblem,
    Part,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

HEADER_FAMILIES: Final = frozenset({"DropHeaders", "HeaderFrom", "InsertHeader", "HasHeaderKey"})
ORIGINAL_TOPIC: Final = "__sparkherd_original_topic"
"""The topic a record was read from, when the chain may route it elsewhere: where a
failed record is said to be, and what its dead letter queue headers name."""


def reads_headers(config: Mapping[str, str]) -> bool:
    """Whether the chain reads or writes headers, so the records must be read with them
    (Spark reads a partition's headers only when asked)."""
    chain = parse_chain(config)
    stages = [s.transform for s in chain] + [s.predicate for s in chain if s.predicate]
    return any(
        configured.family in HEADER_FAMILIES
        or (configured.family == "ExtractNewRecordState" and configured.items("add.headers"))
        for configured in stages
    )


def sink_context(
    spark: SparkSession, config: Mapping[str, str], converters: RecordConverters
) -> ChainContext:
    """Records read from Kafka: a JSON side without schemas is Connect's schemaless."""
    schemaless: frozenset[Part] = frozenset(
        spec.side for spec in converters if spec.kind == "json" and not spec.schemas_enable
    )
    return ChainContext(spark, schemaless, True, internal_topics(config))


def chained_records(
    decoded: DataFrame,
    config: Mapping[str, str],
    converters: RecordConverters,
    spark: SparkSession,
) -> DataFrame:
    """The decoded records (`worker.records.converters.records.decode_records`) after
    the connector's chain; as they are without one. `ConnectorConfigError` naming the
    setting when a stage cannot apply to the records' types."""
    chain = parse_chain(config)
    if not chain:
        return decoded
    frame = with_headers(decoded.withColumn(ORIGINAL_TOPIC, decoded["topic"]), ORIGINAL_HEADERS)
    context = sink_context(spark, config, converters)
    try:
        return apply_chain(frame, chain, context, frame[ERROR_COLUMN].isNotNull()).drop(HEADERS)
    except ChainProblem as exc:
        raise ConnectorConfigError([ConfigProblem(exc.key, exc.message)]) from None


def chained_types(
    spark: SparkSession,
    config: Mapping[str, str],
    converters: RecordConverters,
    types: PayloadTypes,
) -> PayloadTypes:
    """The key's and value's types after the chain, when the converters' are known
    before the records come: what `transform.sql` is analysed against, and where a stage
    that cannot apply to them (a field the value lacks) is found before the config is
    stored."""
    chain: Chain = parse_chain(config)
    if not chain or not types.known:
        return types
    assert types.key is not None and types.value is not None
    schema = StructType(
        [
            StructField(KEY, types.key),
            StructField(VALUE, types.value),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
            StructField(HEADERS, HEADER_TYPE),
        ]
    )
    empty = spark.createDataFrame([], schema)
    try:
        chained = apply_chain(empty, chain, sink_context(spark, config, converters))
    except ChainProblem as exc:
        raise ConnectorConfigError([ConfigProblem(exc.key, exc.message)]) from None
    return PayloadTypes(chained.schema[KEY].dataType, chained.schema[VALUE].dataType)
