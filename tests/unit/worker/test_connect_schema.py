"""Connect's JSON envelope schemas and Spark types, without Spark: the schema written for
a Spark type read back into that type, what a struct's fields keep of a schema Spark types
cannot say, and what cannot be mapped. (That the schemas are Connect's is
tests/integration/test_converters_differential.py's to show, against Connect's own.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DayTimeIntervalType,
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
    VariantType,
)

from worker.records.converters.connect_schema import (
    UnmappableTypeError,
    connect_schema,
    spark_type,
)
from worker.records.converters.json_reading import wire_type

ORDER = StructType(
    [
        StructField("id", LongType(), False),
        StructField("day", DateType(), True),
        StructField("amount", DecimalType(10, 2), True),
        StructField("tags", ArrayType(StringType(), True), True),
        StructField("by_code", MapType(IntegerType(), StringType(), True), True),
    ]
)
TIME = "org.apache.kafka.connect.data.Time"


def test_floats_are_written_by_connects_names_and_sparkherds_old_names_still_read() -> None:
    assert connect_schema(FloatType())["type"] == "float"
    assert connect_schema(DoubleType())["type"] == "double"
    for name, data_type in [("float", FloatType()), ("double", DoubleType())]:
        assert spark_type({"type": name}) == data_type
    assert spark_type({"type": "float32"}) == FloatType()
    assert spark_type({"type": "float64"}) == DoubleType()


def test_a_schema_connect_wrote_without_a_precision_reads_as_the_widest_decimal() -> None:
    schema = {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "3"},
    }
    assert spark_type(schema) == DecimalType(38, 3)
    wider = {**schema, "parameters": {"scale": "3", "connect.decimal.precision": "65"}}
    assert spark_type(wider) == DecimalType(38, 3)


def test_a_fields_attributes_that_spark_types_do_not_say_are_kept_with_it() -> None:
    fields = [
        {"type": "int32", "optional": False, "name": TIME, "version": 1, "field": "clock"},
        {"type": "int64", "optional": False, "default": 7, "doc": "how many", "field": "n"},
        {
            "type": "bytes",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2"},
            "field": "amount",
        },
        {
            "type": "struct",
            "fields": [{"type": "string", "optional": True, "name": "x.Name", "field": "a"}],
            "optional": True,
            "name": "x.Inner",
            "version": 2,
            "parameters": {"k": "v"},
            "field": "inner",
        },
    ]
    schema = {"type": "struct", "fields": fields, "optional": False}
    data_type = spark_type(schema)
    assert data_type["clock"].dataType == IntegerType()
    assert connect_schema(data_type, optional=False) == schema


def test_elsewhere_only_what_the_spark_type_says_is_kept() -> None:
    date = {"type": "int32", "optional": True, "name": "org.apache.kafka.connect.data.Date"}
    schema = {"type": "array", "items": date, "optional": False, "name": "x.Dates"}
    assert connect_schema(spark_type(schema), optional=False) == {
        "type": "array",
        "items": {**date, "version": 1},
        "optional": False,
    }


@pytest.mark.parametrize(
    ("data_type", "problem"),
    [(DayTimeIntervalType(), "no schema")],
)
def test_types_connect_cannot_carry_are_refused(data_type: DataType, problem: str) -> None:
    with pytest.raises(UnmappableTypeError, match=problem):
        connect_schema(data_type)


DECIMAL = "org.apache.kafka.connect.data.Decimal"
INT8 = {"type": "int8"}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "uuid"},
        {"type": "array"},
        {"type": "struct"},
        {"type": "map", "keys": {"type": "map", "keys": INT8, "values": INT8}, "values": INT8},
        {"type": "bytes", "name": DECIMAL},
        {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "-2"}},
        {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "39"}},
        {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "two"}},
    ],
)
def test_schemas_spark_cannot_hold_are_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(UnmappableTypeError):
        spark_type(schema)


def test_what_needs_converting_is_parsed_as_text_or_a_variant() -> None:
    wire = wire_type(ORDER)
    assert wire["day"].dataType == StringType()
    assert wire["amount"].dataType == VariantType()
    assert wire["by_code"].dataType == StringType(), "Connect's pairs"
    assert wire_type(MapType(StringType(), TimestampType())) == MapType(StringType(), StringType())


PRIMITIVES = st.sampled_from(
    [
        ByteType(),
        ShortType(),
        IntegerType(),
        LongType(),
        FloatType(),
        DoubleType(),
        BooleanType(),
        StringType(),
        BinaryType(),
        DateType(),
        TimestampType(),
        DecimalType(12, 4),
    ]
)
NAMES = st.text("abcdefghij_", min_size=1, max_size=6)


def _nested(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
    fields = st.lists(
        st.tuples(NAMES, children, st.booleans()), min_size=1, max_size=4, unique_by=lambda t: t[0]
    )
    return st.one_of(
        st.builds(ArrayType, children, st.booleans()),
        st.builds(MapType, PRIMITIVES, children, st.booleans()),
        fields.map(lambda fs: StructType([StructField(n, t, o) for n, t, o in fs])),
    )


@given(st.recursive(PRIMITIVES, _nested, max_leaves=12))
def test_every_spark_type_connect_can_carry_comes_back_as_it_was(data_type: DataType) -> None:
    assert spark_type(connect_schema(data_type)) == data_type
