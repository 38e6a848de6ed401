"""Values as Connect writes them as text (`org.apache.kafka.connect.data.Values`): what
Cast writes for a value cast to string, and what Connect's default header converter
(`SimpleHeaderConverter`) writes as a header's bytes, as Spark expressions.

At the top a string is itself; inside an array, a map or a struct it is quoted, with
`\\` and `"` escaped. Numbers are Java's `toString` (a decimal below 10^-6 in
scientific notation, as `BigDecimal.toString`), bytes base64, a Date or Timestamp by
`Values.dateFormatFor` (in UTC: Connect uses the JVM's zone, which is UTC where it runs
in containers), arrays `[a,b]`, maps `{k:v}`, structs `{"field":value}`, null `null`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    MapType,
    StringType,
    StructType,
    TimestampType,
)

if TYPE_CHECKING:
    from pyspark.sql import Column

DAY_MS: Final = 86_400_000


def java_double_text(column: Column) -> Column:
    """Java's `Double.toString` (`Float.toString`), which is what Spark's cast writes."""
    return column.cast("string")


def java_decimal_text(column: Column, data_type: DecimalType) -> Column:
    """`BigDecimal.toString`: plain unless the adjusted exponent is below -6."""
    from pyspark.sql import functions as f

    plain = column.cast("string")
    if data_type.scale <= 6:
        return plain
    unscaled = f.abs(column * f.lit(10**data_type.scale)).cast("decimal(38,0)").cast("string")
    adjusted = f.length(unscaled) - f.lit(1 + data_type.scale)
    fraction = f.substring(unscaled, 2, 1 << 16)
    scientific = f.concat(
        f.when(column < 0, f.lit("-")).otherwise(f.lit("")),
        f.substring(unscaled, 1, 1),
        f.when(f.length(fraction) > 0, f.concat(f.lit("."), fraction)).otherwise(f.lit("")),
        f.lit("E"),
        adjusted.cast("string"),
    )
    return f.when(adjusted >= -6, plain).otherwise(scientific)


def values_date_text(column: Column, data_type: DataType) -> Column:
    """`Values.dateFormatFor`: the time of day within the epoch's first day (and before
    it), the date at a midnight, the date and time otherwise; in UTC."""
    from pyspark.sql import functions as f

    millis = (
        f.unix_date(column).cast("long") * f.lit(DAY_MS)
        if isinstance(data_type, DateType)
        else f.unix_millis(column)
    )
    wall = f.expr("timestamp_ntz'1970-01-01 00:00:00'") + f.make_dt_interval(
        secs=(millis.cast("decimal(20,0)") / f.lit(1000)).cast("decimal(18,6)")
    )
    return (
        f.when(millis < DAY_MS, f.date_format(wall, "HH:mm:ss.SSS'Z'"))
        .when(millis % DAY_MS == 0, f.date_format(wall, "yyyy-MM-dd"))
        .otherwise(f.date_format(wall, "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"))
    )


def connect_text(column: Column, data_type: DataType, embedded: bool = False) -> Column:
    """What `Values.convertToString` writes for a value of `data_type` (null stays null
    at the top, and is `null` inside)."""
    from pyspark.sql import functions as f

    text = _text(column, data_type, embedded)
    return f.coalesce(text, f.lit("null")) if embedded else text


def _text(column: Column, data_type: DataType, embedded: bool) -> Column:
    from pyspark.sql import functions as f

    if isinstance(data_type, StringType | BinaryType):
        raw = f.base64(column) if isinstance(data_type, BinaryType) else column
        if not embedded:
            return raw
        escaped = f.replace(f.replace(raw, f.lit("\\"), f.lit("\\\\")), f.lit('"'), f.lit('\\"'))
        return f.concat(
            f.lit('"'), escaped if isinstance(data_type, StringType) else raw, f.lit('"')
        )
    if isinstance(data_type, DecimalType):
        return java_decimal_text(column, data_type)
    if isinstance(data_type, DateType | TimestampType):
        return values_date_text(column, data_type)
    if isinstance(data_type, ArrayType):
        items = f.transform(column, lambda item: connect_text(item, data_type.elementType, True))
        return f.concat(f.lit("["), f.array_join(items, ","), f.lit("]"))
    if isinstance(data_type, MapType):
        entries = f.transform(
            f.map_entries(column),
            lambda entry: f.concat(
                connect_text(entry["key"], data_type.keyType, True),
                f.lit(":"),
                connect_text(entry["value"], data_type.valueType, True),
            ),
        )
        return f.concat(f.lit("{"), f.array_join(entries, ","), f.lit("}"))
    if isinstance(data_type, StructType):
        fields = [
            f.concat(
                connect_text(f.lit(field.name), StringType(), True),
                f.lit(":"),
                connect_text(column[field.name], field.dataType, True),
            )
            for field in data_type.fields
        ]
        inner = f.concat_ws(",", *fields) if fields else f.lit("")
        return f.when(column.isNotNull(), f.concat(f.lit("{"), inner, f.lit("}")))
    return column.cast("string")
