"""The converters' Spark expressions in a real local Spark (with spark-avro from Maven
Central, as a worker fetches it): each converter's encoding decodes to the same values,
a record that cannot be converted is marked rather than thrown, `errors.tolerance=none`
names where the record is, and the types a config declares are checked by Spark."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

import pytest
from pyspark.sql import functions as f
from pyspark.sql.types import BinaryType, StructType, _parse_datatype_string

from tests.support.in_process_spark import binary_rows, in_process_spark
from worker.kafka.source import SCHEMA
from worker.plugins.api import ConnectorConfigError
from worker.records.converters.columns import decode, encode, row_payload, with_parses
from worker.records.converters.payload_types import declared_type, inferred_type
from worker.records.converters.records import (
    ERROR_COLUMN,
    PayloadTypes,
    decode_records,
    failing_on_errors,
)
from worker.records.converters.spec import RecordConverters, converter_spec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

ROWS = "id LONG, name STRING, day DATE, at TIMESTAMP, amount DECIMAL(10,2), tags ARRAY<STRING>"
AVRO_ROW = json.dumps(
    {
        "type": "record",
        "name": "Row",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"]},
        ],
    }
)


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    conf = {"spark.master": "local[2]", "spark.sql.session.timeZone": "UTC"}
    with in_process_spark("converter-columns", conf) as session:
        yield session


def rows(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [
            (
                1,
                "ä",
                date(2024, 2, 29),
                datetime(2024, 1, 2, 3, 4, 5, 678000, UTC),
                Decimal("12.30"),
                ["a"],
            ),
            (2, None, None, None, None, []),
        ],
        ROWS,
    )


@pytest.mark.parametrize(
    "settings",
    [
        {"value.converter": "json", "value.converter.schemas.enable": "false"},
        {"value.converter": "json"},
        {
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
            "value.schema": ROWS,
        },
    ],
    ids=["plain-inferred", "envelope-inferred", "plain-ddl"],
)
def test_json_rows_come_back_as_they_were(spark: SparkSession, settings: dict[str, str]) -> None:
    original = rows(spark)
    writing = {k: v for k, v in settings.items() if k != "value.schema"}
    written = converter_spec(writing, "value", "write")
    payload, data_type = row_payload(written, original.schema)
    encoded = original.select(encode(written, payload, data_type).alias("raw"))
    texts = [r.raw.encode() for r in encoded.collect()]
    read = converter_spec(settings, "value", "read")
    payload_type = declared_type(read, spark) or inferred_type(read, spark, texts)
    decoded = decode(read, f.col("raw").cast("binary"), payload_type)
    back = (
        with_parses(encoded, decoded)
        .select(decoded.value.alias("v"), decoded.failed.alias("failed"))
        .collect()
    )
    assert [r.failed for r in back] == [False, False]
    as_read = {field: [getattr(r.v, field) for r in back] for field in original.columns}
    as_written = {
        field: [getattr(r, field) for r in original.collect()] for field in original.columns
    }
    if "value.schema" in settings or settings.get("value.converter.schemas.enable") != "false":
        assert as_read == as_written
    else:  # inferred from plain JSON: dates, timestamps and decimals are numbers and text
        assert as_read["id"] == [1, 2] and as_read["name"] == ["ä", None]
        assert as_read["tags"] == [["a"], []]


@pytest.mark.parametrize(
    ("settings", "prefix"),
    [
        ({"value.converter": "avro", "value.converter.avro.wire.format": "plain"}, b""),
        (
            {"value.converter": "avro", "value.converter.avro.schema.id": "7"},
            b"\x00\x00\x00\x00\x07",
        ),
    ],
)
def test_avro_comes_back_as_it_was_with_or_without_confluents_prefix(
    spark: SparkSession, settings: dict[str, str], prefix: bytes
) -> None:
    settings = {**settings, "value.converter.avro.schema": AVRO_ROW}
    spec = converter_spec(settings, "value", "write")
    original = spark.createDataFrame([(1, "a"), (2, None)], "id LONG, name STRING")
    payload, data_type = row_payload(spec, original.schema)
    encoded = original.select(encode(spec, payload, data_type).alias("raw"))
    assert all(bytes(r.raw).startswith(prefix) for r in encoded.collect())
    decoded = decode(spec, f.col("raw"), None)
    back = (
        with_parses(encoded, decoded)
        .select(decoded.value.alias("v"), decoded.failed.alias("failed"))
        .collect()
    )
    assert [(r.v.id, r.v.name, r.failed) for r in back] == [(1, "a", False), (2, None, False)]
    # Every field may be null: a payload Avro cannot read decodes as a record of nulls.
    assert declared_type(spec, spark) == _parse_datatype_string("id LONG, name STRING")


@pytest.mark.parametrize(
    ("settings", "value"),
    [
        ({"value.converter": "string"}, "ä"),
        ({"value.converter": "bytes"}, bytearray(b"\x00\xff")),
        ({"value.converter": "json", "value.converter.schemas.enable": "false"}, "ä"),
        ({"value.converter": "json"}, "ä"),
    ],
)
def test_one_column_rows_through_each_converter(
    spark: SparkSession, settings: dict[str, str], value: object
) -> None:
    kind = "BINARY" if isinstance(value, bytearray) else "STRING"
    original = spark.createDataFrame([(value,), (None,)], f"only {kind}")
    spec = converter_spec(settings, "value", None)
    column, data_type = (
        row_payload(spec, original.schema)
        if spec.kind in ("string", "bytes")
        else (f.col("only"), original.schema[0].dataType)
    )
    encoded = original.select(encode(spec, column, data_type).cast("binary").alias("raw"))
    decoded = decode(spec, f.col("raw"), declared_type(spec, spark) or data_type)
    back = (
        with_parses(encoded, decoded)
        .select(decoded.value.alias("v"), decoded.failed.alias("f"))
        .collect()
    )
    assert [(r.v, r.f) for r in back] == [(value, False), (None, False)]


BAD_JSON = [b'{"id": "one"}', b"{not json", b"[1]", b'"one"']
"""(Text after a whole JSON value is ignored, as Connect's Jackson ignores it.)"""


@pytest.mark.parametrize(
    ("settings", "payloads"),
    [
        ({"value.converter": "json", "value.converter.schemas.enable": "false"}, BAD_JSON),
        ({"value.converter": "json"}, [*BAD_JSON, b'{"schema": null, "id": 1}']),
        (
            {"value.converter": "avro", "value.converter.avro.wire.format": "plain"},
            [b"\xff\xff\xff"],
        ),
        (
            {"value.converter": "avro", "value.converter.avro.schema.id": "7"},
            [b"\x02\x02a", b"\x00\x00\x00\x00\x08\x02\x02a", b"\x00"],
        ),
    ],
)
def test_what_cannot_be_converted_is_marked_and_nulls_are_not(
    spark: SparkSession, settings: dict[str, str], payloads: list[bytes]
) -> None:
    if settings["value.converter"] == "avro":
        settings = {**settings, "value.converter.avro.schema": AVRO_ROW}
    else:
        settings = {**settings, "value.schema": "id LONG"}
    spec = converter_spec(settings, "value", "read")
    raw = binary_rows(spark, [*payloads, None, b"null"])
    decoded = decode(spec, f.col("raw"), declared_type(spec, spark))
    marked = with_parses(raw, decoded).select(decoded.failed.alias("f"))
    expected = [True] * len(payloads) + [False, spec.kind == "avro"]
    assert [r.f for r in marked.collect()] == expected


def test_errors_tolerance_none_fails_at_the_record_naming_where_it_is(spark: SparkSession) -> None:
    kafka: StructType = _parse_datatype_string(SCHEMA)
    batch = spark.createDataFrame(
        [
            (b"k", b'{"id": 1}', "orders", 2, 16, datetime.now(UTC), 0),
            (b"k", b'{"id": "x"}', "orders", 2, 17, datetime.now(UTC), 0),
        ],
        kafka,
    )
    converters = RecordConverters(
        converter_spec({}, "key", "read", "string"),
        converter_spec(
            {
                "value.converter": "json",
                "value.converter.schemas.enable": "false",
                "value.schema": "id LONG",
            },
            "value",
            "read",
        ),
    )
    types = PayloadTypes(_parse_datatype_string("STRING"), _parse_datatype_string("id LONG"))
    decoded = decode_records(batch, converters, types)
    assert [r[ERROR_COLUMN] for r in decoded.collect()] == [None, "value (value.converter=json)"]
    with pytest.raises(Exception, match="topic orders, partition 2, offset 17") as failed:
        failing_on_errors(decoded).collect()
    assert "Cannot convert the value (value.converter=json)" in str(failed.value)


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"value.converter": "json", "value.schema": "id LONG,, name"}, "value.schema"),
        (
            {"value.converter": "avro", "value.converter.avro.schema": '{"type": "record"}'},
            "value.converter.avro.schema",
        ),
        (
            {"value.converter": "avro", "value.converter.avro.schema": '"longer"'},
            "value.converter.avro.schema",
        ),
    ],
)
def test_a_schema_that_does_not_parse_is_named_by_key(
    spark: SparkSession, settings: dict[str, str], key: str
) -> None:
    spec = converter_spec(settings, "value", "read")
    with pytest.raises(ConnectorConfigError) as refused:
        declared_type(spec, spark)
    assert [p.key for p in refused.value.problems] == [key]


def test_bytes_and_strings_need_no_schema(spark: SparkSession) -> None:
    spec = converter_spec({}, "value", "read")
    assert declared_type(spec, spark) == BinaryType()
