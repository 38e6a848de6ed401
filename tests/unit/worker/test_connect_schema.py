"""Connect's JSON envelope schemas and Spark types, without Spark: the schema Connect's
JsonConverter writes for a value, read back into the Spark type it came from."""

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
)

from worker.records.converters.connect_schema import (
    UnmappableTypeError,
    connect_schema,
    has_logical_types,
    spark_type,
    wire_type,
)

ORDER = StructType(
    [
        StructField("id", LongType(), False),
        StructField("day", DateType(), True),
        StructField("amount", DecimalType(10, 2), True),
        StructField("tags", ArrayType(StringType(), True), True),
    ]
)


def test_a_struct_as_connects_json_converter_writes_its_schema() -> None:
    assert connect_schema(ORDER, optional=False) == {
        "type": "struct",
        "optional": False,
        "fields": [
            {"type": "int64", "optional": False, "field": "id"},
            {
                "type": "int32",
                "name": "org.apache.kafka.connect.data.Date",
                "version": 1,
                "optional": True,
                "field": "day",
            },
            {
                "type": "bytes",
                "name": "org.apache.kafka.connect.data.Decimal",
                "version": 1,
                "parameters": {"scale": "2", "connect.decimal.precision": "10"},
                "optional": True,
                "field": "amount",
            },
            {
                "type": "array",
                "items": {"type": "string", "optional": True},
                "optional": True,
                "field": "tags",
            },
        ],
    }


def test_a_schema_connect_wrote_without_a_precision_reads_as_the_widest_decimal() -> None:
    schema = {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "parameters": {"scale": "3"},
    }
    assert spark_type(schema) == DecimalType(38, 3)


@pytest.mark.parametrize(
    ("data_type", "problem"),
    [
        (MapType(IntegerType(), StringType()), "keys must be strings"),
        (DayTimeIntervalType(), "no schema"),
    ],
)
def test_types_connect_cannot_carry_are_refused(data_type: DataType, problem: str) -> None:
    with pytest.raises(UnmappableTypeError, match=problem):
        connect_schema(data_type)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "uuid"},
        {"type": "array"},
        {"type": "struct"},
        {"type": "map", "keys": {"type": "int32"}, "values": {"type": "string"}},
    ],
)
def test_schemas_spark_cannot_hold_are_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(UnmappableTypeError):
        spark_type(schema)


def test_dates_and_timestamps_travel_as_numbers() -> None:
    assert has_logical_types(ORDER)
    assert not has_logical_types(ArrayType(StringType()))
    assert wire_type(ORDER)["day"].dataType == IntegerType()
    assert wire_type(MapType(StringType(), TimestampType())) == MapType(StringType(), LongType())


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
        st.builds(MapType, st.just(StringType()), children, st.booleans()),
        fields.map(lambda fs: StructType([StructField(n, t, o) for n, t, o in fs])),
    )


@given(st.recursive(PRIMITIVES, _nested, max_leaves=12))
def test_every_spark_type_connect_can_carry_comes_back_as_it_was(data_type: DataType) -> None:
    assert spark_type(connect_schema(data_type)) == data_type
