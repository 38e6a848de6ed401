"""TimestampConverter, and the UTC wall clock the chain formats timestamps from.

A timestamp is read by its type, as Connect reads it by its schema: a Spark timestamp
is Connect's Timestamp, a date its Date, a long an epoch number in `unix.precision`, a
string a text in `format`; it is written as `target.type` says. Connect works in
milliseconds: a finer epoch number loses its last digits both ways, and seconds,
micro- and nanoseconds are truncated toward zero as Java's `TimeUnit` does (saturating
where they would overflow). Strings are read and written in UTC with the pattern
translated for Spark (`date_formats`); Spark reads a string strictly where
SimpleDateFormat is lenient (a 13th month is not the next year's first), and a string
it cannot read fails its record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql.types import DataType, DateType, LongType, StringType, TimestampType

from worker.records.transforms.config import Configured
from worker.records.transforms.date_formats import spark_pattern
from worker.records.transforms.record import (
    ChainContext,
    ChainProblem,
    Change,
    Record,
    describe,
    field_of,
    on,
    side,
    struct_of,
)

if TYPE_CHECKING:
    from pyspark.sql import Column

DAY_MS: Final = 86_400_000
LONG_MAX: Final = 2**63 - 1
UTC_SUFFIX: Final = " +0000"
"""What the chain adds to a string to read it as UTC (with ` Z` added to its pattern:
a space, since a quote after the pattern's own closing quote would read as an escaped
quote)."""
TO_MILLIS: Final = {
    "seconds": 1000,
    "milliseconds": 1,
    "microseconds": -1000,
    "nanoseconds": -1_000_000,
}
"""Multiply by (or, negative, divide by) this to make milliseconds."""


def utc_wall_clock(timestamp: Column) -> Column:
    """The UTC date and time of a timestamp, as a TIMESTAMP_NTZ (which Spark formats as
    it is, in no session's time zone)."""
    from pyspark.sql import functions as f

    seconds = (f.unix_micros(timestamp).cast("decimal(20,0)") / f.lit(1_000_000)).cast(
        "decimal(18,6)"
    )
    return f.expr("timestamp_ntz'1970-01-01 00:00:00'") + f.make_dt_interval(secs=seconds)


def timestamp_converter(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    name = configured.text("field") or ""
    if not name:
        value, error = _convert(configured, f.col(part), record.type_of(part))
        return on(part, value, error)
    struct = struct_of(configured, record, part)
    target = field_of(configured, struct, name, "field")
    converted, error = _convert(configured, f.col(part)[name], target.dataType)
    fields = [
        (converted if field.name == name else f.col(part)[field.name]).alias(field.name)
        for field in struct.fields
    ]
    return on(part, f.when(f.col(part).isNotNull(), f.struct(*fields)), error)


def _convert(
    configured: Configured, column: Column, source: DataType
) -> tuple[Column, Column | None]:
    from pyspark.sql import functions as f

    millis, error = _to_millis(configured, column, source)
    target = configured.text("target.type")
    precision = configured.text("unix.precision") or "milliseconds"
    if target == "string":
        pattern = spark_pattern(configured.text("format") or "").pattern
        out = f.date_format(utc_wall_clock(f.timestamp_millis(millis)), pattern)
    elif target == "unix":
        out = _scaled(millis, -TO_MILLIS[precision])
    elif target == "Date":
        days = (millis - f.pmod(millis, f.lit(DAY_MS))) / f.lit(DAY_MS)
        out = f.date_from_unix_date(days.cast("int"))
    else:
        out = f.timestamp_millis(millis)
    return out, error


def _to_millis(
    configured: Configured, column: Column, source: DataType
) -> tuple[Column, Column | None]:
    from pyspark.sql import functions as f

    if isinstance(source, TimestampType):
        return f.unix_millis(column), None
    if isinstance(source, DateType):
        return f.unix_date(column).cast("long") * f.lit(DAY_MS), None
    if isinstance(source, LongType):
        precision = configured.text("unix.precision") or "milliseconds"
        return _scaled(column, TO_MILLIS[precision]), None
    if isinstance(source, StringType):
        return _parsed(configured, column)
    raise ChainProblem(
        configured.key("field"),
        f"TimestampConverter reads a timestamp, a date, a long or a string, not {describe(source)}",
    )


def _scaled(millis: Column, factor: int) -> Column:
    """`millis` times `factor` (saturating at the long range), or divided by `-factor`
    toward zero."""
    from pyspark.sql import functions as f

    if factor == 1:
        return millis
    if factor < 0:
        return (millis.cast("decimal(20,0)") / f.lit(-factor)).cast("long")
    bound = LONG_MAX // factor
    return (
        f.when(millis > bound, f.lit(LONG_MAX))
        .when(millis < -bound - 1, f.lit(-LONG_MAX - 1))
        .otherwise(millis * f.lit(factor))
    ).cast("long")


def _parsed(configured: Configured, column: Column) -> tuple[Column, Column]:
    from pyspark.sql import functions as f

    text = configured.text("format") or ""
    if not text.strip():
        raise ChainProblem(configured.key("format"), "needed to read string timestamps")
    pattern = spark_pattern(text)
    if pattern.zoned:
        instant = f.try_to_timestamp(column, f.lit(pattern.reading))
    else:
        in_utc = f.concat(column, f.lit(UTC_SUFFIX))
        instant = f.try_to_timestamp(in_utc, f.lit(f"{pattern.pattern} Z"))
    failed = column.isNotNull() & instant.isNull()
    reason = f.concat(
        f.lit("Could not parse timestamp: value ("),
        column,
        f.lit(f") does not match pattern ({text})"),
    )
    return f.unix_millis(instant), f.when(failed, reason)
