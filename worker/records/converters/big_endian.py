"""Big-endian two's-complement bytes and the numbers they hold, as Spark expressions: what
Kafka's Short, Integer and Long serializers write, and what Connect's `Decimal` is on the
wire (`BigInteger.toByteArray()` of its unscaled value: the fewest bytes that hold it).

Spark casts no binary to a number or back, so bytes travel as their hex digits: `conv`
reads 16 of them as a signed 64-bit number, and two such halves hold 128 bits, more than
the 38 digits of Spark's widest decimal needs. Every expression here answers null, never
an error, for bytes it cannot read, so that a bad record is marked, not thrown.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import DecimalType

if TYPE_CHECKING:
    from pyspark.sql import Column

LONG_DIGITS: Final = 16
"""Hex digits of 64 bits."""
MAX_DECIMAL_BYTES: Final = 16
_TWO_64: Final = Decimal(2**64)
_UNSCALED: Final = DecimalType(38, 0)


def _sign_extended(digits: Column, width: int) -> Column:
    """Hex `digits` left-padded to `width` with the sign of their first digit."""
    from pyspark.sql import functions as f

    negative = f.substring(digits, 1, 1).isin(*"89ABCDEF")
    return f.lpad(digits, width, f.when(negative, f.lit("F")).otherwise(f.lit("0")))


def signed_long(raw: Column) -> Column:
    """Up to 8 bytes as the signed number they are (a BIGINT)."""
    from pyspark.sql import functions as f

    return f.conv(_sign_extended(f.hex(raw), LONG_DIGITS), 16, -10).cast("long")


def long_bytes(number: Column, width: int) -> Column:
    """The low `width` bytes of `number` (an integral column), big-endian."""
    from pyspark.sql import functions as f

    digits = f.lpad(f.hex(number.cast("long")), LONG_DIGITS, "0")
    return f.unhex(f.substring(digits, LONG_DIGITS - 2 * width + 1, 2 * width))


def decimal_from_bytes(raw: Column, data_type: DecimalType) -> Column:
    """Connect's Decimal bytes (the unscaled value) as a decimal of `data_type`'s scale;
    null where they are empty, wider than 16 bytes, or hold more than `data_type` does."""
    from pyspark.sql import functions as f

    digits = _sign_extended(f.hex(raw), 2 * LONG_DIGITS)
    high = f.conv(f.substring(digits, 1, LONG_DIGITS), 16, -10).cast(_UNSCALED)
    low = f.conv(f.substring(digits, LONG_DIGITS + 1, LONG_DIGITS), 16, 10).cast(_UNSCALED)
    two_64 = f.lit(_TWO_64)
    # high * 2^64 alone may pass Spark's widest decimal where the sum does not: a
    # negative number is summed from the multiple above it.
    unscaled = f.when(
        high < 0, f.try_add(f.try_multiply(high + 1, two_64), f.try_subtract(low, two_64))
    ).otherwise(f.try_add(f.try_multiply(high, two_64), low))
    scaled = f.concat(unscaled.cast("string"), f.lit(f"E-{data_type.scale}"))
    readable = f.length(raw).between(1, MAX_DECIMAL_BYTES)
    return f.when(readable, scaled.try_cast(data_type))


def decimal_bytes(value: Column) -> Column:
    """The bytes Connect writes for a decimal: its unscaled value, big-endian, in the
    fewest bytes that hold it with its sign."""
    from pyspark.sql import functions as f

    unscaled = f.replace(value.cast("string"), f.lit("."), f.lit("")).cast(_UNSCALED)
    low = f.pmod(unscaled, f.lit(_TWO_64))
    # `div` truncates toward zero; the high half is the floor.
    borrow = f.when((unscaled < 0) & (low != 0), 1).otherwise(0)
    high = f.call_function("div", unscaled, f.lit(_TWO_64)) - borrow
    digits = f.concat(
        f.lpad(f.hex(high), LONG_DIGITS, "0"),
        f.lpad(f.conv(low.cast("string"), 10, 16), LONG_DIGITS, "0"),
    )
    fewest = f.regexp_replace(
        f.regexp_replace(digits, "^(00)+(?=[0-7])", ""), "^(FF)+(?=[89A-F])", ""
    )
    return f.when(value.isNotNull(), f.unhex(fewest))
