"""Connect's `ShortConverter`, `IntegerConverter`, `LongConverter`, `FloatConverter`,
`DoubleConverter` and `BooleanConverter` (`org.apache.kafka.connect.converters`), as
Spark expressions: Kafka's serializers' encodings, one value of a fixed number of bytes.

Integers are big-endian two's complement (`big_endian`); a float or double is the
big-endian bytes of its IEEE 754 bits as Java's `floatToRawIntBits` and
`doubleToRawLongBits` give them, called by Spark's `reflect` (Spark has no cast between a
float and its bits); a boolean is one byte, 1 or 0. As Kafka's deserializers do, a record
of another length, or a boolean byte that is neither, cannot be read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
)

from worker.records.converters.big_endian import long_bytes, signed_long
from worker.records.converters.spec import FixedKind

if TYPE_CHECKING:
    from pyspark.sql import Column


@dataclass(frozen=True)
class FixedWidth:
    """One converter's encoding: its width in bytes, the Spark type it reads into and
    writes from, and for floats the Java class whose bit conversions it uses."""

    width: int
    data_type: DataType
    java_class: str | None = None

    @property
    def bits_type(self) -> str:
        return "int" if self.width == 4 else "long"


ENCODINGS: Final[Mapping[FixedKind, FixedWidth]] = {
    "short": FixedWidth(2, ShortType()),
    "integer": FixedWidth(4, IntegerType()),
    "long": FixedWidth(8, LongType()),
    "float": FixedWidth(4, FloatType(), "java.lang.Float"),
    "double": FixedWidth(8, DoubleType(), "java.lang.Double"),
    "boolean": FixedWidth(1, BooleanType()),
}
_TRUE: Final = bytearray(b"\x01")
_FALSE: Final = bytearray(b"\x00")


def decode_fixed(kind: FixedKind, raw: Column) -> tuple[Column, Column]:
    """The value in `raw` and whether `raw` could not be read (null stays null)."""
    from pyspark.sql import functions as f

    encoding = ENCODINGS[kind]
    if isinstance(encoding.data_type, BooleanType):
        value = f.when(raw == f.lit(_TRUE), True).when(raw == f.lit(_FALSE), False)
        return value, raw.isNotNull() & value.isNull()
    fits = f.length(raw) == encoding.width
    number = signed_long(raw)
    if encoding.java_class is not None:
        from_bits = "intBitsToFloat" if encoding.width == 4 else "longBitsToDouble"
        bits = number.cast(encoding.bits_type)
        number = f.reflect(f.lit(encoding.java_class), f.lit(from_bits), bits)
    value = f.when(fits, number.cast(encoding.data_type))
    return value, raw.isNotNull() & ~fits


def encode_fixed(kind: FixedKind, value: Column) -> Column:
    """`value` (of `ENCODINGS[kind].data_type`) as its serializer's bytes."""
    from pyspark.sql import functions as f

    encoding = ENCODINGS[kind]
    if isinstance(encoding.data_type, BooleanType):
        return f.when(value, f.lit(_TRUE)).when(~value, f.lit(_FALSE))
    number = value
    if encoding.java_class is not None:
        to_bits = "floatToRawIntBits" if encoding.width == 4 else "doubleToRawLongBits"
        bits = f.reflect(f.lit(encoding.java_class), f.lit(to_bits), value)
        number = bits.cast(encoding.bits_type)
    return f.when(value.isNotNull(), long_bytes(number, encoding.width))
