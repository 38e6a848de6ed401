"""The Spark type of what a converter decodes, known before the query runs.

A type comes from the config where it can (`value.schema`'s DDL, the Avro schema, the
fixed type of the other converters): then a connector's `transform.sql` is analysed against
it when the config is stored. A json payload with neither a DDL nor anything else to go
by takes its type from data present when the task first starts: the envelope's own
schema (`schemas.enable=true`) or the type `spark.read.json` infers from the first
records. That type is kept in the task's checkpoint, so a later start (after the sampled
records expired) decodes as the first one did.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import BinaryType, DataType, StringType

from worker.plugins.api import ConfigProblem, ConnectorConfigError
from worker.records.converters.connect_schema import UnmappableTypeError, spark_type
from worker.records.converters.fixed_width import ENCODINGS
from worker.records.converters.spec import ConverterSpec, schema_key
from worker.records.nesting import value_nesting_problem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SAMPLE_RECORDS: Final = 500
"""How many records the type of a json payload is inferred from."""
WRAPPER_FIELD: Final = "v"


class NoSampleError(RuntimeError):
    """Nothing to infer a json payload's type from yet."""


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def declared_type(spec: ConverterSpec, spark: SparkSession) -> DataType | None:
    """The payload's type when the config says it; None when only data can (json
    without a DDL). Raises `ConnectorConfigError` naming the key that does not parse."""
    if spec.kind == "bytes":
        return BinaryType()
    if spec.kind == "string":
        return StringType()
    if spec.kind == "avro":
        return _avro_type(spec, spark)
    if spec.kind != "json":
        return ENCODINGS[spec.kind].data_type
    if spec.schema_ddl is None:
        return None
    from pyspark.sql.types import _parse_datatype_string

    try:
        return _parse_datatype_string(spec.schema_ddl)
    except Exception as exc:
        problem = ConfigProblem(schema_key(spec.side), f"not a DDL schema: {_first_line(exc)}")
        raise ConnectorConfigError([problem]) from None


def _avro_type(spec: ConverterSpec, spark: SparkSession) -> DataType:
    """Parsed by Avro's own parser (Spark ships Avro), then typed by spark-avro."""
    from pyspark.sql import functions as f

    from worker.records.converters.columns import SparkAvroMissingError, decode

    schema_setting = spec.setting("avro.schema")
    jvm = spark.sparkContext._jvm
    assert jvm is not None and spec.avro_schema is not None
    try:
        jvm.org.apache.avro.Schema.Parser().parse(spec.avro_schema)
    except Exception as exc:
        problem = ConfigProblem(schema_setting, f"not an Avro schema: {_avro_reason(exc)}")
        raise ConnectorConfigError([problem]) from None
    try:
        empty = spark.range(0).select(f.lit(None).cast("binary").alias("raw"))
        return empty.select(decode(spec, f.col("raw"), None).value.alias("v")).schema[0].dataType
    except SparkAvroMissingError as exc:
        raise ConnectorConfigError([ConfigProblem(exc.key, exc.problem)]) from None
    except Exception as exc:  # spark-avro's own refusal, e.g. a recursive record
        reason = _avro_reason(exc)
        problem = ConfigProblem(schema_setting, f"an Avro schema Spark cannot read: {reason}")
        raise ConnectorConfigError([problem]) from None


def _avro_reason(error: BaseException) -> str:
    """The parser's own message, without py4j's wrapping, on one line and without the
    schema that spark-avro echoes after it."""
    java = getattr(error, "java_exception", None)
    if java is None:
        return _first_line(error)
    return " ".join(str(java.getMessage()).split()).split(": {")[0]


def inferred_type(spec: ConverterSpec, spark: SparkSession, samples: Sequence[bytes]) -> DataType:
    """The json payload's type, from records (raw key or value bytes) read at start."""
    texts = [s.decode("utf-8", "replace") for s in samples if s.strip() not in (b"", b"null")]
    parsed = [value for value in map(_json_or_none, texts) if value is not None]
    if spec.schemas_enable:
        for envelope in parsed:
            schema = envelope.get("schema") if isinstance(envelope, dict) else None
            if isinstance(schema, dict):
                try:
                    return spark_type(schema)
                except UnmappableTypeError as exc:
                    raise ValueError(f"{spec.key}: the records' envelope schema: {exc}") from None
        raise NoSampleError(_no_sample(spec, "record with an envelope schema"))
    parsed = [value for value in parsed if value_nesting_problem(value) is None]
    if not parsed:
        raise NoSampleError(_no_sample(spec, "JSON record"))
    lines = [json.dumps({WRAPPER_FIELD: value}) for value in parsed]
    frame = spark.read.json(spark.sparkContext.parallelize(lines, 1))
    return frame.schema[WRAPPER_FIELD].dataType


def _json_or_none(text: str) -> object | None:
    """None for text that is no JSON, or JSON nested deeper than Python's parser goes (a
    record of 100,000 `[` failed the start with a `RecursionError`)."""
    try:
        parsed: object = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return parsed


def _no_sample(spec: ConverterSpec, what: str) -> str:
    return (
        f"{spec.key}: no {what} to infer the {spec.side}'s type from among the first "
        f"{SAMPLE_RECORDS} records of the task's partitions: produce some first, or set "
        f"{schema_key(spec.side)} (a DDL such as `id LONG, name STRING`)"
    )


def task_payload_type(
    spec: ConverterSpec,
    spark: SparkSession,
    checkpoint_dir: Path,
    samples: Callable[[], Sequence[bytes]],
) -> DataType | None:
    """The type a task decodes with: declared, else the one its checkpoint holds from
    the first start, else inferred from `samples()` now and kept there."""
    declared = declared_type(spec, spark)
    if declared is not None or spec.kind != "json":
        return declared
    from pyspark.sql.types import _parse_datatype_json_string

    kept = checkpoint_dir / f"{spec.side}-payload-type.json"
    how = {"schemas.enable": spec.schemas_enable}
    if kept.is_file():
        record = json.loads(kept.read_text())
        if record.get("inferred_with") == how:
            found: DataType = _parse_datatype_json_string(json.dumps(record["type"]))
            return found
    inferred = inferred_type(spec, spark, samples())
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps({"inferred_with": how, "type": inferred.jsonValue()}))
    return inferred
