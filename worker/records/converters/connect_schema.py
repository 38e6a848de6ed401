"""Connect's JSON envelope schema (`{"schema": ..., "payload": ...}`) and Spark types,
each mapped to the other, as `org.apache.kafka.connect.json.JsonConverter` writes them.

Type names are Connect's (`int8`..`int64`, `float`, `double`, `boolean`, `string`,
`bytes`, `array`, `map`, `struct`); `float32`/`float64`, which sparkherd wrote before it
wrote Connect's names, are still read. Connect's logical `Date`, `Timestamp` and `Decimal`
are Spark's dates, timestamps and decimals (their values travel as Connect writes them:
`json_reading`, `json_writing`); `Time` has no Spark type and is its wire value, an int
of milliseconds since midnight. A map's keys may be of any type Spark's map keys can be.

What a Spark type does not say about a schema (its `name`, `version`, `doc`, other
`parameters`, its `default`, a `Time`'s name) is kept, for a struct's fields, in the
Spark field's metadata under `CONNECT`, so that a record read keeps it when it is
written again, and a field's default is what a null reads as. Elsewhere (the top of a
record, an array's items, a map's keys and values) only what the Spark type says is kept.
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
TIME: Final = "org.apache.kafka.connect.data.Time"
TIMESTAMP: Final = "org.apache.kafka.connect.data.Timestamp"
DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
PRECISION: Final = "connect.decimal.precision"
"""The parameter Debezium and Confluent's converters give a Decimal's precision in."""
SCALE: Final = "scale"
MAX_PRECISION: Final = 38
"""Spark's widest decimal: a Decimal without a precision, or a wider one, reads as this."""
CONNECT: Final = "connect"
"""The key of a Spark field's metadata that holds what its type does not say."""
ATTRIBUTES: Final = ("name", "version", "doc", "parameters", "default")
"""A schema's attributes after its `optional`, in the order Connect writes them."""
LOGICAL_VERSION: Final = 1

_PRIMITIVES: Final[Mapping[type[DataType], str]] = {
    ByteType: "int8",
    ShortType: "int16",
    IntegerType: "int32",
    LongType: "int64",
    FloatType: "float",
    DoubleType: "double",
    BooleanType: "boolean",
    StringType: "string",
    BinaryType: "bytes",
}
_SPARK_PRIMITIVES: Final[Mapping[str, DataType]] = {
    **{name: kind() for kind, name in _PRIMITIVES.items()},
    "float32": FloatType(),
    "float64": DoubleType(),
}


class UnmappableTypeError(ValueError):
    """A Spark type Connect has no schema for, or a Connect schema Spark cannot hold."""


def connect_schema(
    data_type: DataType, optional: bool = True, kept: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The envelope schema of a value of `data_type` (`optional`: it may be null), with
    the attributes `kept` from the schema it was read from (a field's `CONNECT` metadata:
    a value None says the attribute was absent)."""
    schema = _connect_type(data_type)
    schema["optional"] = optional
    attributes = {**_implied(data_type), **(kept or {})}
    schema.update((key, attributes[key]) for key in ATTRIBUTES if attributes.get(key) is not None)
    return schema


def _connect_type(data_type: DataType) -> dict[str, Any]:
    """The type and, for a container, what it contains: the part before `optional`."""
    if type(data_type) in _PRIMITIVES:
        return {"type": _PRIMITIVES[type(data_type)]}
    if isinstance(data_type, DateType):
        return {"type": "int32"}
    if isinstance(data_type, TimestampType):
        return {"type": "int64"}
    if isinstance(data_type, DecimalType):
        return {"type": "bytes"}
    if isinstance(data_type, ArrayType):
        return {
            "type": "array",
            "items": connect_schema(data_type.elementType, data_type.containsNull),
        }
    if isinstance(data_type, MapType):
        return {
            "type": "map",
            "keys": connect_schema(data_type.keyType, False),
            "values": connect_schema(data_type.valueType, data_type.valueContainsNull),
        }
    if isinstance(data_type, StructType):
        return {
            "type": "struct",
            "fields": [
                {
                    **connect_schema(field.dataType, field.nullable, field.metadata.get(CONNECT)),
                    "field": field.name,
                }
                for field in data_type.fields
            ],
        }
    raise UnmappableTypeError(f"Connect has no schema for Spark's {data_type.simpleString()}")


def _implied(data_type: DataType) -> dict[str, Any]:
    """The attributes a Spark type says by itself: a logical type's name, version and
    parameters."""
    if isinstance(data_type, DateType):
        return {"name": DATE, "version": LOGICAL_VERSION}
    if isinstance(data_type, TimestampType):
        return {"name": TIMESTAMP, "version": LOGICAL_VERSION}
    if isinstance(data_type, DecimalType):
        parameters = {SCALE: str(data_type.scale), PRECISION: str(data_type.precision)}
        return {"name": DECIMAL, "version": LOGICAL_VERSION, "parameters": parameters}
    return {}


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
        return _decimal(schema.get("parameters"))
    if isinstance(kind, str) and kind in _SPARK_PRIMITIVES:
        return _SPARK_PRIMITIVES[kind]
    if kind == "array":
        items = _part(schema, "items")
        return ArrayType(_spark_type(items), _optional(items))
    if kind == "map":
        keys, values = _part(schema, "keys"), _part(schema, "values")
        key_type = _spark_type(keys)
        if isinstance(key_type, MapType):
            raise UnmappableTypeError("a map whose keys are maps cannot be read into Spark")
        return MapType(key_type, _spark_type(values), _optional(values))
    if kind == "struct":
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise UnmappableTypeError("a struct schema needs a 'fields' list")
        return StructType([_field(field) for field in fields if _is_field(field)])
    raise UnmappableTypeError(f"not a Connect schema type: {kind!r}")


def _is_field(field: object) -> bool:
    return isinstance(field, Mapping) and "field" in field


def _field(field: Mapping[str, Any]) -> StructField:
    data_type = _spark_type(field)
    implied = _implied(data_type)
    kept = {key: field.get(key) for key in ATTRIBUTES if field.get(key) != implied.get(key)}
    metadata = {CONNECT: kept} if kept else {}
    return StructField(str(field["field"]), data_type, _optional(field), metadata)


def _decimal(parameters: object) -> DecimalType:
    """Connect's Decimal has a scale, and only Debezium's and Confluent's a precision."""
    given = parameters if isinstance(parameters, Mapping) else {}
    try:
        scale = int(given[SCALE])
        precision = int(given.get(PRECISION, MAX_PRECISION))
    except (KeyError, TypeError, ValueError):
        raise UnmappableTypeError(
            f"a Decimal schema needs an integer '{SCALE}' parameter (and '{PRECISION}', "
            f"when given, is an integer): {dict(given)}"
        ) from None
    if not 0 <= scale <= MAX_PRECISION:
        raise UnmappableTypeError(
            f"a Decimal of scale {scale} cannot be read into Spark (0 to {MAX_PRECISION})"
        )
    return DecimalType(min(MAX_PRECISION, max(precision, scale, 1)), scale)


def _part(schema: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    part = schema.get(name)
    if not isinstance(part, Mapping):
        raise UnmappableTypeError(f"a {schema.get('type')} schema needs '{name}'")
    return part


def _optional(schema: Mapping[str, Any]) -> bool:
    return schema.get("optional") is True


def has_string_keys(data_type: MapType) -> bool:
    """Connect writes such a map as a JSON object, any other as an array of pairs."""
    return isinstance(data_type.keyType, StringType)


def field_default(field: StructField) -> object | None:
    """The default of a field read from a Connect schema, as JSON: what a null reads as."""
    kept = field.metadata.get(CONNECT) or {}
    return kept.get("default")
