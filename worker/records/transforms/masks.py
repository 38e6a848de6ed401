"""What MaskField puts in place of a field's value, by the field's type, as Connect's
MaskField does: an empty value of the type, or `replacement` converted to it the way
Connect's `Values` converts a string (through `java.math.BigDecimal`: `1e3` is a
thousand, a fraction is truncated toward zero, and a number outside a narrower type
wraps around as a Java narrowing cast does).

Connect fails each record whose masked field holds a type it cannot mask (a struct,
bytes; with a replacement also a boolean, a date, an array or a map); the type is known
before any record comes, so here the chain is refused instead.
"""

from __future__ import annotations

import re
import struct
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
    ArrayType,
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
    TimestampType,
)

from worker.records.transforms.config import Configured
from worker.records.transforms.record import ChainProblem, describe

if TYPE_CHECKING:
    from pyspark.sql import Column

JAVA_BIG_DECIMAL: Final = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
INTEGRAL_BITS: Final[dict[type[DataType], int]] = {
    ByteType: 8,
    ShortType: 16,
    IntegerType: 32,
    LongType: 64,
}


def masked(configured: Configured, data_type: DataType, replacement: str | None) -> Column:
    """The masked value of a non-null field of `data_type`, as a literal of that type."""
    from pyspark.sql import functions as f

    if replacement is not None:
        return f.lit(replacement_value(configured, data_type, replacement)).cast(data_type)
    if isinstance(data_type, BooleanType):
        return f.lit(False)
    if isinstance(
        data_type, ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType
    ):
        return f.lit(0).cast(data_type)
    if isinstance(data_type, DecimalType):
        return f.lit(0).cast(data_type)
    if isinstance(data_type, StringType):
        return f.lit("")
    if isinstance(data_type, DateType):
        return f.lit(date(1970, 1, 1))
    if isinstance(data_type, TimestampType):
        return f.timestamp_seconds(f.lit(0))
    if isinstance(data_type, ArrayType):
        return f.array().cast(data_type)
    if isinstance(data_type, MapType):
        return f.create_map().cast(data_type)
    raise ChainProblem(
        configured.key("fields"), f"MaskField cannot mask a {describe(data_type)} field"
    )


def replacement_value(configured: Configured, data_type: DataType, text: str) -> object:
    """`replacement` as a value of `data_type`, as Connect converts it."""
    if isinstance(data_type, StringType):
        return text
    if not isinstance(data_type, (*tuple(INTEGRAL_BITS), FloatType, DoubleType, DecimalType)):
        raise ChainProblem(
            configured.key("replacement"),
            f"a replacement masks numbers and strings only, not a {describe(data_type)} field",
        )
    number = java_big_decimal(text)
    if number is None:
        raise ChainProblem(
            configured.key("replacement"), f"{text!r} is not a number for a {describe(data_type)}"
        )
    bits = INTEGRAL_BITS.get(type(data_type))
    if bits is not None:
        return wrapped(truncated_long(number), bits)
    if isinstance(data_type, DecimalType):
        return _decimal(configured, data_type, number)
    double = float(number)
    return _float32(double) if isinstance(data_type, FloatType) else double


def java_big_decimal(text: str) -> Decimal | None:
    """`new BigDecimal(text)`: None where Java throws NumberFormatException."""
    if JAVA_BIG_DECIMAL.fullmatch(text) is None:
        return None
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def truncated_long(number: Decimal) -> int:
    """`BigDecimal.longValue()`: toward zero, then the low 64 bits as a signed long."""
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    coefficient = int("".join(map(str, digits)) or "0")
    if exponent >= 0:
        magnitude = coefficient * pow(10, exponent, 1 << 64)
    else:
        magnitude = coefficient // 10 ** min(-exponent, len(digits) + 1)
    return wrapped(-magnitude if sign else magnitude, 64)


def wrapped(value: int, bits: int) -> int:
    """A Java narrowing cast to a signed integer of `bits` bits."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _float32(value: float) -> float:
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def _decimal(configured: Configured, data_type: DecimalType, number: Decimal) -> Decimal:
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    digits = len(number.as_tuple().digits)
    if -exponent > data_type.scale or digits + exponent > data_type.precision - data_type.scale:
        raise ChainProblem(
            configured.key("replacement"),
            f"{number} does not fit the field's {describe(data_type)}",
        )
    return number
