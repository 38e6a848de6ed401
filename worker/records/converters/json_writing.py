"""Spark values written as Connect's JsonConverter writes them, with or without its
envelope: the same JSON text, byte for byte, for the same values.

A date is written as its days since the epoch, a timestamp as milliseconds, a decimal as
the base64 of its unscaled bytes (`decimal.format=BASE64`, Connect's default) or as a
JSON number (`NUMERIC`), a map whose keys are not strings as an array of `[key, value]`
pairs. Everything else is Spark's `to_json`, which writes what Connect's Jackson writes:
the same number texts (`1.0E300`, `-0.0`, a decimal's `toString`), `"NaN"` and
`"Infinity"` as strings, bytes as base64. The envelope's schema is written as Connect
writes it, its keys in Connect's order and no spaces.

Only a value with a map of non-string keys is written piece by piece (`to_json` would
write its keys as an object's names); elsewhere one `to_json` writes the whole value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
    ArrayType,
    DataType,
    DateType,
    DecimalType,
    MapType,
    StructType,
    TimestampType,
)

from worker.records.converters.big_endian import decimal_bytes
from worker.records.converters.connect_schema import connect_schema, has_string_keys
from worker.records.converters.spec import DecimalFormat

if TYPE_CHECKING:
    from pyspark.sql import Column

TO_JSON: Final = {"ignoreNullFields": "false"}
"""A null field is written as null, as Connect writes it (Spark leaves it out)."""
ASTRAL: Final = "[\\x{10000}-\\x{10FFFF}]"
NOT_ASTRAL: Final = "[^\\x{10000}-\\x{10FFFF}]"


def json_value(
    payload: Column, data_type: DataType, schemas_enable: bool, decimals: DecimalFormat
) -> Column:
    """`payload` (of `data_type`) as Connect's JsonConverter writes it; null stays null
    (a tombstone). `UnmappableTypeError` for a type Connect has no schema for."""
    from pyspark.sql import functions as f

    body = _astral_escaped(json_text(payload, data_type, decimals))
    if schemas_enable:
        schema = jackson_json(connect_schema(data_type, optional=False))
        body = f.concat(f.lit(f'{{"schema":{schema},"payload":'), body, f.lit("}"))
    return f.when(payload.isNotNull(), body)


def _astral_escaped(text: Column) -> Column:
    """`text` with each character beyond the Basic Multilingual Plane as the `\\u`
    escapes of its UTF-16 surrogates, as Jackson's UTF-8 writer under Connect writes it
    (Spark's writes its UTF-8)."""
    from pyspark.sql import functions as f

    chunks = f.regexp_extract_all(text, f.lit(f"{ASTRAL}|{NOT_ASTRAL}+"), 0)

    def escaped(chunk: Column) -> Column:
        units = f.hex(f.encode(chunk, "UTF-16BE"))
        pair = f.concat(
            f.lit("\\u"), f.substring(units, 1, 4), f.lit("\\u"), f.substring(units, 5, 4)
        )
        return f.when(chunk.rlike(f"^{ASTRAL}$"), pair).otherwise(chunk)

    return f.when(text.rlike(ASTRAL), f.array_join(f.transform(chunks, escaped), "")).otherwise(
        text
    )


def jackson_json(value: object) -> str:
    """`value` (JSON data) as the text Jackson writes under Connect: no spaces, text
    beyond ASCII as it is but control characters and surrogate pairs escaped."""
    if isinstance(value, str):
        return _jackson_string(value)
    if isinstance(value, dict):
        members = (f"{_jackson_string(str(k))}:{jackson_json(v)}" for k, v in value.items())
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(jackson_json, value)) + "]"
    return json.dumps(value)


_SHORT_ESCAPES: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _jackson_string(text: str) -> str:
    escaped = []
    for char in text:
        code = ord(char)
        if char in _SHORT_ESCAPES:
            escaped.append(_SHORT_ESCAPES[char])
        elif code < 0x20:
            escaped.append(f"\\u{code:04X}")
        elif code > 0xFFFF:
            high, low = divmod(code - 0x10000, 0x400)
            escaped.append(f"\\u{0xD800 + high:04X}\\u{0xDC00 + low:04X}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def json_text(column: Column, data_type: DataType, decimals: DecimalFormat) -> Column:
    """The JSON text of `column`'s value, `null` for null (never a null text)."""
    from pyspark.sql import functions as f

    if not _has_pairs(data_type):
        wire = _to_wire(column, data_type, decimals)
        if isinstance(data_type, ArrayType | MapType | StructType):
            return f.coalesce(f.to_json(wire, TO_JSON), f.lit("null"))
        # A value alone is the one element of a JSON array, without its brackets.
        listed = f.to_json(f.array(wire), TO_JSON)
        return listed.substr(f.lit(2), f.length(listed) - 2)
    if isinstance(data_type, ArrayType):
        element = data_type.elementType
        items = f.transform(column, lambda item: json_text(item, element, decimals))
        text = f.concat(f.lit("["), f.array_join(items, ","), f.lit("]"))
    elif isinstance(data_type, MapType):
        entries = f.transform(f.map_entries(column), lambda e: _entry(e, data_type, decimals))
        opened, closed = ("{", "}") if has_string_keys(data_type) else ("[", "]")
        text = f.concat(f.lit(opened), f.array_join(entries, ","), f.lit(closed))
    else:
        assert isinstance(data_type, StructType)
        members = [
            f.concat(
                f.lit(f"{_name(field.name)}:"),
                json_text(column[field.name], field.dataType, decimals),
            )
            for field in data_type.fields
        ]
        text = f.concat(f.lit("{"), f.concat_ws(",", *members), f.lit("}"))
    return f.when(column.isNotNull(), text).otherwise(f.lit("null"))


def _entry(entry: Column, data_type: MapType, decimals: DecimalFormat) -> Column:
    """One map entry: `"key":value` of an object, or a `[key,value]` pair."""
    from pyspark.sql import functions as f

    key = json_text(entry["key"], data_type.keyType, decimals)
    value = json_text(entry["value"], data_type.valueType, decimals)
    if has_string_keys(data_type):
        return f.concat(key, f.lit(":"), value)
    return f.concat(f.lit("["), key, f.lit(","), value, f.lit("]"))


def _name(name: str) -> str:
    """A field name as Jackson writes it."""
    return _jackson_string(name)


def _has_pairs(data_type: DataType) -> bool:
    if isinstance(data_type, ArrayType):
        return _has_pairs(data_type.elementType)
    if isinstance(data_type, MapType):
        return not has_string_keys(data_type) or _has_pairs(data_type.valueType)
    if isinstance(data_type, StructType):
        return any(_has_pairs(field.dataType) for field in data_type.fields)
    return False


def _to_wire(column: Column, data_type: DataType, decimals: DecimalFormat) -> Column:
    """`column` with its dates, timestamps and (base64) decimals as Connect writes them,
    for `to_json` to write the rest."""
    from pyspark.sql import functions as f

    leaves: dict[type[DataType], Callable[[Column], Column]] = {
        DateType: f.unix_date,
        TimestampType: f.unix_millis,
    }
    if decimals == "BASE64":
        leaves[DecimalType] = lambda value: f.base64(decimal_bytes(value))
    return _mapped(column, data_type, leaves)


def _mapped(
    column: Column,
    data_type: DataType,
    leaves: dict[type[DataType], Callable[[Column], Column]],
) -> Column:
    """`column` with each value of a type in `leaves` replaced by what its function makes."""
    from pyspark.sql import functions as f

    if type(data_type) in leaves:
        return leaves[type(data_type)](column)
    if not _holds(data_type, leaves):
        return column
    if isinstance(data_type, ArrayType):
        element = data_type.elementType
        return f.transform(column, lambda item: _mapped(item, element, leaves))
    if isinstance(data_type, MapType):
        values = data_type.valueType
        return f.transform_values(column, lambda _, item: _mapped(item, values, leaves))
    assert isinstance(data_type, StructType)
    fields = [
        _mapped(column[field.name], field.dataType, leaves).alias(field.name)
        for field in data_type.fields
    ]
    return f.when(column.isNotNull(), f.struct(*fields))


def _holds(data_type: DataType, leaves: dict[type[DataType], Callable[[Column], Column]]) -> bool:
    if type(data_type) in leaves:
        return True
    if isinstance(data_type, ArrayType):
        return _holds(data_type.elementType, leaves)
    if isinstance(data_type, MapType):
        return _holds(data_type.valueType, leaves)
    if isinstance(data_type, StructType):
        return any(_holds(field.dataType, leaves) for field in data_type.fields)
    return False
