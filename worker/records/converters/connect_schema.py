"""Connect's JSON envelope schema (`{"schema": ..., "payload": ...}`) and Spark types,
each mapped to the other, as `org.apache.kafka.connect.json.JsonConverter` writes them.

Connect's logical types travel as their wire types: `Date` as int32 days since the
epoch, `Timestamp` as int64 milliseconds, `Decimal` as bytes with a `scale` parameter.
Spark dates and timestamps are therefore converted to and from those numbers around the
JSON (`columns`), and decimals are written as JSON numbers (Connect's
`decimal.format=NUMERIC`, which every Connect JsonConverter reads); Connect's default
base64 decimals are not read. Map keys must be strings (Connect writes a map with other
keys as an array of pairs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

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

from worker.records.nesting import value_nesting_problem

DATE: Final = "org.apache.kafka.connect.data.Date"
TIMESTAMP: Final = "org.apache.kafka.connect.data.Timestamp"
DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
PRECISION: Final = "connect.decimal.precision"
SCALE: Final = "scale"
DEFAULT_PRECISION: Final = 38

_PRIMITIVES: Final[Mapping[type[DataType], str]] = {
    ByteType: "int8",
    ShortType: "int16",
    IntegerType: "int32",
    LongType: "int64",
    FloatType: "float32",
    DoubleType: "float64",
    BooleanType: "boolean",
    StringType: "string",
    BinaryType: "bytes",
}
_SPARK_PRIMITIVES: Final = {name: kind() for kind, name in _PRIMITIVES.items()}


class UnmappableTypeError(ValueError):
    """A Spark type Connect has no schema for, or a Connect schema Spark cannot hold."""


def connect_schema(data_type: DataType, optional: bool = True) -> dict[str, Any]:
    """The envelope schema of a value of `data_type` (`optional`: it may be null)."""
    schema = _connect_type(data_type)
    schema["optional"] = optional
    return schema


def _connect_type(data_type: DataType) -> dict[str, Any]:
    if type(data_type) in _PRIMITIVES:
        return {"type": _PRIMITIVES[type(data_type)]}
    if isinstance(data_type, DateType):
        return {"type": "int32", "name": DATE, "version": 1}
    if isinstance(data_type, TimestampType):
        return {"type": "int64", "name": TIMESTAMP, "version": 1}
    if isinstance(data_type, DecimalType):
        parameters = {SCALE: str(data_type.scale), PRECISION: str(data_type.precision)}
        return {"type": "bytes", "name": DECIMAL, "version": 1, "parameters": parameters}
    if isinstance(data_type, ArrayType):
        return {
            "type": "array",
            "items": connect_schema(data_type.elementType, data_type.containsNull),
        }
    if isinstance(data_type, MapType):
        if not isinstance(data_type.keyType, StringType):
            raise UnmappableTypeError(
                f"a map's keys must be strings in Connect's JSON, not {data_type.keyType}"
            )
        return {
            "type": "map",
            "keys": connect_schema(data_type.keyType, False),
            "values": connect_schema(data_type.valueType, data_type.valueContainsNull),
        }
    if isinstance(data_type, StructType):
        return {
            "type": "struct",
            "fields": [
                {**connect_schema(field.dataType, field.nullable), "field": field.name}
                for field in data_type.fields
            ],
        }
    raise UnmappableTypeError(f"Connect has no schema for Spark's {data_type.simpleString()}")


def spark_type(schema: Mapping[str, Any]) -> DataType:
    """The Spark type of a payload that an envelope's `schema` describes. A schema comes
    from a record, and is measured before it is walked: too deep, and the walk here or
    pyspark's of the type it makes would exhaust Python's stack."""
    too_deep = value_nesting_problem(schema)
    if too_deep is not None:
        raise UnmappableTypeError(too_deep)
    return _spark_type(schema)


def _spark_type(schema: Mapping[str, Any]) -> DataType:
    kind = schema.get("type")
    name = schema.get("name")
    if name == DATE and kind == "int32":
        return DateType()
    if name == TIMESTAMP and kind == "int64":
        return TimestampType()
    if name == DECIMAL and kind == "bytes":
        parameters = schema.get("parameters") or {}
        scale = int(parameters.get(SCALE, 0))
        precision = int(parameters.get(PRECISION, DEFAULT_PRECISION))
        return DecimalType(precision, scale)
    if isinstance(kind, str) and kind in _SPARK_PRIMITIVES:
        return _SPARK_PRIMITIVES[kind]
    if kind == "array":
        items = _part(schema, "items")
        return ArrayType(_spark_type(items), _optional(items))
    if kind == "map":
        keys, values = _part(schema, "keys"), _part(schema, "values")
        if keys.get("type") != "string":
            raise UnmappableTypeError(
                f"a map's keys must be strings to read it into Spark, not {keys.get('type')}"
            )
        return MapType(StringType(), _spark_type(values), _optional(values))
    if kind == "struct":
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise UnmappableTypeError("a struct schema needs a 'fields' list")
        return StructType(
            [
                StructField(str(field["field"]), _spark_type(field), _optional(field))
                for field in fields
                if isinstance(field, Mapping) and "field" in field
            ]
        )
    raise UnmappableTypeError(f"not a Connect schema type: {kind!r}")


def _part(schema: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    part = schema.get(name)
    if not isinstance(part, Mapping):
        raise UnmappableTypeError(f"a {schema.get('type')} schema needs '{name}'")
    return part


def _optional(schema: Mapping[str, Any]) -> bool:
    return bool(schema.get("optional", False))


def has_logical_types(data_type: DataType) -> bool:
    """Whether a value of `data_type` holds dates or timestamps, which travel as
    numbers in Connect's JSON and need converting around it."""
    if isinstance(data_type, DateType | TimestampType):
        return True
    if isinstance(data_type, ArrayType):
        return has_logical_types(data_type.elementType)
    if isinstance(data_type, MapType):
        return has_logical_types(data_type.valueType)
    if isinstance(data_type, StructType):
        return any(has_logical_types(field.dataType) for field in data_type.fields)
    return False


def wire_type(data_type: DataType) -> DataType:
    """`data_type` as Connect's JSON carries it: dates as ints, timestamps as longs."""
    if isinstance(data_type, DateType):
        return IntegerType()
    if isinstance(data_type, TimestampType):
        return LongType()
    if isinstance(data_type, ArrayType):
        return ArrayType(wire_type(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(
            data_type.keyType, wire_type(data_type.valueType), data_type.valueContainsNull
        )
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(f.name, wire_type(f.dataType), f.nullable) for f in data_type.fields]
        )
    return data_type
