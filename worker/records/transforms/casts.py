"""Cast, as Connect's Cast converts a value: through Java's `Number` methods, not Spark's
casts, which differ on the edges.

* to an integer: a narrower integer wraps around (Java's narrowing cast); a float or
  double is truncated toward zero and saturates at the int (or long) range, NaN is 0,
  and an int8/int16 then wraps; a decimal is truncated and wraps; a boolean is 1 or 0; a
  string must be a plain decimal integer in range (Java's `Byte.parseByte`...), else
  the record fails; a Date is its days since the epoch and a Timestamp its milliseconds;
* to a float: a string is read as Java's `Double.parseDouble` reads one (surrounding
  spaces, `NaN`, `Infinity`, an `f`/`d` suffix), else the record fails;
* to a boolean: a number is true when its truncated long value is not 0 (0.5 is false),
  a string is true when it is `true` in any case and false otherwise;
* to a string: as Java's `toString`, bytes as base64, a Date or Timestamp as Connect's
  `Values` writes one (`yyyy-MM-dd` at midnight, `HH:mm:ss.SSS'Z'` within the epoch's
  first day, `yyyy-MM-dd'T'HH:mm:ss.SSS'Z'` otherwise; in UTC).

Spark runs with ANSI casts, which throw on overflow: every cast here is one that cannot
overflow, or a `try_cast` whose null is read as the failure it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
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
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from worker.records.transforms.class_checks import cast_spec
from worker.records.transforms.config import Configured
from worker.records.transforms.record import (
    ChainContext,
    ChainProblem,
    Change,
    Record,
    describe,
    field_of,
    first_error,
    on,
    side,
    struct_of,
)
from worker.records.transforms.values_text import (
    java_decimal_text,
    java_double_text,
    values_date_text,
)

if TYPE_CHECKING:
    from pyspark.sql import Column

TARGETS: Final[dict[str, DataType]] = {
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float32": FloatType(),
    "float64": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
}
INTEGERS: Final = (ByteType, ShortType, IntegerType, LongType)
FLOATS: Final = (FloatType, DoubleType)
BITS: Final = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}
INTEGER_TEXT: Final = r"^[+-]?[0-9]+$"
FLOAT_TEXT: Final = (
    r"^[\x00-\x20]*[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)"
    r"[\x00-\x20]*$"
)
LONG_MAX: Final = 2**63 - 1


def cast(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    casts = cast_spec(configured.items("spec"))
    if None in casts:
        value, error = cast_value(configured, f.col(part), record.type_of(part), casts[None])
        return on(part, value, error)
    struct = struct_of(configured, record, part)
    for name in casts:
        assert name is not None
        field_of(configured, struct, name, "spec")
    fields, errors = [], []
    for field in struct.fields:
        column = f.col(part)[field.name]
        if field.name in casts:
            column, error = cast_value(configured, column, field.dataType, casts[field.name])
            errors.append(f.when(f.col(part)[field.name].isNotNull(), error))
        fields.append(column.alias(field.name))
    rebuilt = f.when(f.col(part).isNotNull(), f.struct(*fields))
    return on(part, rebuilt, first_error(*errors))


def cast_value(
    configured: Configured, column: Column, source: DataType, target: str
) -> tuple[Column, Column | None]:
    """`column` (of `source`) as `target`, and where a value cannot be cast, why."""
    wanted = TARGETS[target]
    if isinstance(source, StructType) or not _castable(source):
        raise ChainProblem(configured.key("spec"), f"Cast does not cast from {describe(source)}")
    if isinstance(source, BinaryType) and target != "string":
        raise ChainProblem(configured.key("spec"), "bytes cast to string only (as base64)")
    if target == "string":
        return _to_string(column, source), None
    if target == "boolean":
        return _to_boolean(column, source), None
    if isinstance(source, StringType):
        return _from_string(column, wanted, target)
    numeric = _as_number(column, source)
    if isinstance(wanted, FLOATS):
        return numeric.cast(wanted), None
    return _to_integer(numeric, _number_type(source), wanted), None


def _castable(source: DataType) -> bool:
    kinds = (*INTEGERS, *FLOATS, BooleanType, StringType, BinaryType, DecimalType, DateType)
    return isinstance(source, (*kinds, TimestampType))


def _number_type(source: DataType) -> DataType:
    if isinstance(source, DateType):
        return IntegerType()
    if isinstance(source, TimestampType | BooleanType):
        return LongType()
    return source


def _as_number(column: Column, source: DataType) -> Column:
    """Dates as days and timestamps as milliseconds (Connect's encoding of its logical
    types), booleans as 1 or 0; numbers as they are."""
    from pyspark.sql import functions as f

    if isinstance(source, DateType):
        return f.unix_date(column)
    if isinstance(source, TimestampType):
        return f.unix_millis(column)
    if isinstance(source, BooleanType):
        return f.when(column, f.lit(1)).otherwise(f.lit(0)).cast("long")
    return column


def _to_integer(number: Column, source: DataType, wanted: DataType) -> Column:
    from pyspark.sql import functions as f

    bits = BITS[type(wanted)]
    if isinstance(source, FLOATS):
        wide = 64 if bits == 64 else 32
        limit = float(2 ** (wide - 1))
        truncated = (
            f.when(f.isnan(number), f.lit(0))
            .when(number >= limit, f.lit(2 ** (wide - 1) - 1))
            .when(number <= -limit, f.lit(-(2 ** (wide - 1))))
            .otherwise(number.try_cast("long"))
        ).cast("long")
    elif isinstance(source, DecimalType):
        modulus = f.lit(str(2**64)).cast("decimal(38,0)")
        toward_zero = f.when(number >= 0, f.floor(number)).otherwise(f.ceil(number))
        whole = f.pmod(toward_zero.cast("decimal(38,0)"), modulus)
        truncated = f.when(whole > LONG_MAX, whole - modulus).otherwise(whole).cast("long")
    else:
        truncated = number.cast("long")
    if bits == 64:
        return truncated
    half = 1 << (bits - 1)
    low = f.pmod(truncated + f.lit(half), f.lit(1 << bits)) - f.lit(half)
    return low.cast(wanted)


def _from_string(column: Column, wanted: DataType, target: str) -> tuple[Column, Column]:
    from pyspark.sql import functions as f

    if isinstance(wanted, FLOATS):
        trimmed = f.regexp_replace(column, r"^[\x00-\x20]+|[\x00-\x20]+$", "")
        number = f.regexp_replace(trimmed, "[fFdD]$", "")
        value = f.when(column.rlike(FLOAT_TEXT), number.try_cast(wanted))
    else:
        value = f.when(column.rlike(INTEGER_TEXT), column.try_cast(wanted))
    failed = column.isNotNull() & value.isNull()
    reason = f.concat(
        f.lit("Value ("),
        column,
        f.lit(f") is not an {target}" if target[0] == "i" else f") is not a {target}"),
    )
    return value, f.when(failed, reason)


def _to_boolean(column: Column, source: DataType) -> Column:
    from pyspark.sql import functions as f

    if isinstance(source, BooleanType):
        return column
    if isinstance(source, StringType):
        return f.when(column.isNotNull(), f.lower(column) == f.lit("true"))
    number = _to_integer(_as_number(column, source), _number_type(source), LongType())
    return number != f.lit(0)


def _to_string(column: Column, source: DataType) -> Column:
    from pyspark.sql import functions as f

    if isinstance(source, BinaryType):
        return f.base64(column)
    if isinstance(source, FLOATS):
        return java_double_text(column)
    if isinstance(source, DecimalType):
        return java_decimal_text(column, source)
    if isinstance(source, DateType | TimestampType):
        return values_date_text(column, source)
    return column.cast("string")
