"""The `source` view a sink's `transform.sql` is analysed against before it is stored:
Spark's Kafka schema with key and value of the types the config declares.

The view is handed to Spark as a type, never as DDL text: Spark's `toDDL` writes a
column's comment back unescaped (`COMMENT '\\'`), and such text does not parse again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from worker.kafka.source import SCHEMA
from worker.plugins.api import ConfigProblem
from worker.records.converters.columns import decode, with_parses
from worker.records.converters.records import PayloadTypes, view_schema
from worker.records.converters.spec import RecordConverters, schema_key

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType


def source_schema(types: PayloadTypes) -> StructType:
    """The `source` view's schema: Spark's Kafka schema, key and value converted."""
    from pyspark.sql.types import _parse_datatype_string

    return view_schema(_parse_datatype_string(SCHEMA), types)


def unreadable_schemas(
    spark: SparkSession, converters: RecordConverters, types: PayloadTypes
) -> list[ConfigProblem]:
    """A `key.schema`/`value.schema` Spark parses may still name a type its JSON reader
    refuses (`CHAR(3)`, `VARCHAR(4)`): found here, by analysing the very decoding the task
    runs when it starts (a bare `BIGINT` key is read inside a JSON array, a struct as
    it is), on the key that names it."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as f

    raw = spark.createDataFrame([], "raw BINARY")
    problems = []
    for spec, payload in zip(converters, (types.key, types.value), strict=True):
        if spec.schema_ddl is None or payload is None:
            continue
        decoded = decode(spec, f.col("raw"), payload)
        try:
            _ = with_parses(raw, decoded).select(decoded.value, decoded.failed).schema
        except PySparkException as exc:
            problem = str(exc).strip().splitlines()[0]
            problems.append(
                ConfigProblem(schema_key(spec.side), f"not readable as JSON: {problem}")
            )
    return problems
