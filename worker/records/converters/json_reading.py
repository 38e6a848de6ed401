"""Connect's JSON read into Spark values: the type `from_json` parses a payload with
(`wire_type`), and what it parsed turned into the payload's own type (`from_wire`), with
a sign of every value that could not be.

Reading is as lenient as Connect's JsonConverter: a `Decimal` is a JSON number
(`decimal.format=NUMERIC`) or the base64 of its unscaled bytes (`BASE64`, Connect's
default), whatever the converter's own setting; a `Date` is days since the epoch and a
`Timestamp` milliseconds, or the ISO text sparkherd's plain JSON held before it wrote
Connect's numbers; a float's `"NaN"`, `"Infinity"` and `"-Infinity"` are the floats they
name (Connect itself reads them as 0.0). A map whose keys are not strings is Connect's
array of `[key, value]` pairs. A field's default (kept in its metadata by
`connect_schema`) is what a null or absent field reads as.

A value is *bad* where Connect's `toConnectData` would throw: it was there and could not
be converted (a decimal too wide for its type, bytes that are not base64, a pair that is
not two), or it is null where its schema is required and has no default. `from_wire`
never throws for a bad value: it answers null and says so in `bad`.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from worker.records.converters.big_endian import decimal_from_bytes
from worker.records.converters.connect_schema import field_default, has_string_keys

if TYPE_CHECKING:
    from pyspark.sql import Column

NUMBER: Final = "^(TINYINT|SMALLINT|INT|BIGINT|DECIMAL|FLOAT|DOUBLE)"
"""What `schema_of_variant` calls a variant of a JSON number."""
MAX_MILLIS: Final = (2**63 - 1) // 1000
"""The widest Timestamp Spark's microseconds hold."""


@dataclass(frozen=True)
class Converted:
    value: Column
    bad: Column | None
    """True where the wire held a value `value` could not be made from (None: never)."""


def wire_type(data_type: DataType) -> DataType:
    """What `from_json` parses a value of `data_type` as, before `from_wire`: a date or
    timestamp as its text (a number, or an old ISO text), a decimal as a variant (a
    number or a base64 string, told apart by the variant's type), a map with other than
    string keys as the text of its pairs."""
    if isinstance(data_type, DateType | TimestampType):
        return StringType()
    if isinstance(data_type, DecimalType):
        return VariantType()
    if isinstance(data_type, ArrayType):
        return ArrayType(wire_type(data_type.elementType), True)
    if isinstance(data_type, MapType):
        if not has_string_keys(data_type):
            return StringType()
        return MapType(StringType(), wire_type(data_type.valueType), True)
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(f.name, wire_type(f.dataType), True, f.metadata) for f in data_type.fields]
        )
    return data_type


def converted(data_type: DataType) -> bool:
    """Whether `from_wire` changes a value of `data_type` (else it only checks it)."""
    if isinstance(data_type, DateType | TimestampType | DecimalType):
        return True
    if isinstance(data_type, ArrayType):
        return converted(data_type.elementType)
    if isinstance(data_type, MapType):
        return not has_string_keys(data_type) or converted(data_type.valueType)
    if isinstance(data_type, StructType):
        return any(converted(f.dataType) or field_default(f) is not None for f in data_type.fields)
    return False


def _checked(data_type: DataType) -> bool:
    """Whether a value of `data_type` can be bad."""
    if converted(data_type):
        return True
    if isinstance(data_type, ArrayType):
        return not data_type.containsNull or _checked(data_type.elementType)
    if isinstance(data_type, MapType):
        return not data_type.valueContainsNull or _checked(data_type.valueType)
    if isinstance(data_type, StructType):
        return any(not f.nullable or _checked(f.dataType) for f in data_type.fields)
    return False


def _any(*flags: Column | None) -> Column | None:
    present = [flag for flag in flags if flag is not None]
    return reduce(operator.or_, present) if present else None


def _either(first: Column, *rest: Column | None) -> Column:
    return reduce(operator.or_, [flag for flag in rest if flag is not None], first)


def _unread(wire: Column, value: Column) -> Column:
    """There was a value, and none came of it."""
    return wire.isNotNull() & value.isNull()


def from_wire(wire: Column, data_type: DataType) -> Converted:
    """`wire` (of `wire_type(data_type)`) as `data_type`."""
    if isinstance(data_type, DateType):
        return _date(wire)
    if isinstance(data_type, TimestampType):
        return _timestamp(wire)
    if isinstance(data_type, DecimalType):
        return _decimal(wire, data_type)
    if isinstance(data_type, MapType) and not has_string_keys(data_type):
        return _pairs(wire, data_type)
    if isinstance(data_type, ArrayType):
        return _elements(wire, data_type.elementType, data_type.containsNull, array=True)
    if isinstance(data_type, MapType):
        return _elements(wire, data_type.valueType, data_type.valueContainsNull, array=False)
    if isinstance(data_type, StructType):
        return _struct(wire, data_type)
    return Converted(wire, None)


def _date(text: Column) -> Converted:
    from pyspark.sql import functions as f

    days = text.try_cast("int")
    value = f.when(days.isNotNull(), f.date_from_unix_date(days)).otherwise(text.try_cast("date"))
    return Converted(value, _unread(text, value))


def _timestamp(text: Column) -> Converted:
    from pyspark.sql import functions as f

    millis = text.try_cast("long")
    moment = f.when(millis.between(-MAX_MILLIS, MAX_MILLIS), f.timestamp_millis(millis))
    value = f.when(millis.isNotNull(), moment).otherwise(text.try_cast("timestamp"))
    return Converted(value, _unread(text, value))


def _decimal(variant: Column, data_type: DecimalType) -> Converted:
    from pyspark.sql import functions as f

    present = variant.isNotNull() & ~f.is_variant_null(variant)
    text = f.try_variant_get(variant, "$", "string")
    as_bytes = decimal_from_bytes(f.try_to_binary(text, f.lit("base64")), data_type)
    number = f.try_variant_get(variant, "$", data_type.simpleString())
    kind = f.schema_of_variant(variant)
    value = f.when(present & (kind == "STRING"), as_bytes)
    value = value.when(present & kind.rlike(NUMBER), number)
    return Converted(value, present & value.isNull())


def _elements(wire: Column, element: DataType, nullable: bool, *, array: bool) -> Converted:
    """An array's items, or a string-keyed map's values."""
    from pyspark.sql import functions as f

    value = wire
    if converted(element):
        if array:
            value = f.transform(wire, lambda item: from_wire(item, element).value)
        else:
            value = f.transform_values(wire, lambda _, item: from_wire(item, element).value)
    if nullable and not _checked(element):
        return Converted(value, None)
    items = wire if array else f.map_values(wire)
    bad = f.exists(items, lambda item: _item_bad(item, element, nullable))
    return Converted(value, f.coalesce(bad, f.lit(False)))


def _item_bad(wire: Column, data_type: DataType, nullable: bool) -> Column:
    from pyspark.sql import functions as f

    item = from_wire(wire, data_type)
    return _either(f.lit(False), item.bad, None if nullable else item.value.isNull())


def _struct(wire: Column, data_type: StructType) -> Converted:
    from pyspark.sql import functions as f

    fields: list[Column] = []
    bad: list[Column | None] = []
    for field in data_type.fields:
        inner = from_wire(wire[field.name], field.dataType)
        value = inner.value
        default = field_default(field)
        if default is not None:
            value = f.coalesce(value, default_value(default, field.dataType))
        elif not field.nullable:
            bad.append(value.isNull())
        bad.append(inner.bad)
        fields.append(value.alias(field.name, metadata=field.metadata))
    value = f.when(wire.isNotNull(), f.struct(*fields)) if converted(data_type) else wire
    any_bad = _any(*bad)
    return Converted(value, None if any_bad is None else wire.isNotNull() & any_bad)


def default_value(default: object, data_type: DataType) -> Column:
    """A schema's default (JSON, as Connect writes it into the schema) as a constant."""
    from pyspark.sql import functions as f

    listed = f.from_json(f.lit(f"[{json.dumps(default)}]"), ArrayType(wire_type(data_type)))
    return from_wire(f.try_element_at(listed, f.lit(1)), data_type).value


def _pairs(text: Column, data_type: MapType) -> Converted:
    """Connect's `[[key, value], ...]`, parsed from its text: each part as its own raw
    text (a string part as its content) and, where a part is a decimal, as a variant
    too, since only a variant tells a number from a base64 string."""
    from pyspark.sql import functions as f

    key_type, value_type = data_type.keyType, data_type.valueType
    pairs = f.from_json(text, ArrayType(ArrayType(StringType())))
    if isinstance(key_type, DecimalType) or isinstance(value_type, DecimalType):
        variants = f.from_json(text, ArrayType(ArrayType(VariantType())))
        pairs = f.zip_with(pairs, variants, lambda t, v: f.struct(t.alias("t"), v.alias("v")))
    else:
        pairs = f.transform(pairs, lambda t: f.struct(t.alias("t")))

    def part(pair: Column, at: int, part_type: DataType) -> Converted:
        if isinstance(part_type, DecimalType):
            return from_wire(f.try_element_at(pair["v"], f.lit(at)), part_type)
        return _pair_part(f.try_element_at(pair["t"], f.lit(at)), part_type)

    def entry(pair: Column) -> Column:
        key, value = part(pair, 1, key_type), part(pair, 2, value_type)
        missing = None if data_type.valueContainsNull else value.value.isNull()
        not_a_pair = f.coalesce(f.size(pair["t"]) != 2, f.lit(True))
        bad = _either(not_a_pair, key.value.isNull(), key.bad, value.bad, missing)
        return f.struct(key.value.alias("key"), value.value.alias("value"), bad.alias("bad"))

    entries = f.transform(pairs, entry)
    keys = f.transform(entries, lambda e: e["key"])
    repeated = f.size(f.array_distinct(keys)) != f.size(keys)
    unread = pairs.isNull() | f.exists(entries, lambda e: e["bad"]) | repeated
    bad = text.isNotNull() & f.coalesce(unread, f.lit(True))
    kept = f.transform(entries, lambda e: f.struct(e["key"], e["value"]))
    return Converted(f.when(text.isNotNull() & ~bad, f.map_from_entries(kept)), bad)


def _pair_part(raw: Column, part_type: DataType) -> Converted:
    """A key or value of a pair from its raw text (a JSON string's content, any other
    JSON value's text)."""
    from pyspark.sql import functions as f

    if isinstance(wire_type(part_type), StringType):
        return from_wire(raw, part_type)
    if isinstance(part_type, BinaryType):
        value = f.try_to_binary(raw, f.lit("base64"))
        return Converted(value, _unread(raw, value))
    if isinstance(part_type, ArrayType | MapType | StructType):
        return _parsed(raw, part_type)
    value = raw.try_cast(part_type)
    return Converted(value, _unread(raw, value))


def _parsed(raw: Column, data_type: DataType) -> Converted:
    from pyspark.sql import functions as f

    parsed = f.from_json(raw, wire_type(data_type))
    inner = from_wire(parsed, data_type)
    return Converted(inner.value, _any(_unread(raw, parsed), inner.bad))
