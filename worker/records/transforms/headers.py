"""The transforms that read or write headers (DropHeaders, HeaderFrom, InsertHeader) and
the bytes a header gets: headers are Kafka's (a name and bytes, in order, a name possibly
repeated), and a value a transform puts there is written as Connect's default header
converter (`SimpleHeaderConverter`) writes it: `Values.convertToString` as UTF-8
(`values_text`), null as a header without a value.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import DataType

from worker.records.transforms.config import Configured
from worker.records.transforms.fields import rebuilt
from worker.records.transforms.masks import java_big_decimal
from worker.records.transforms.record import (
    HEADER_TYPE,
    HEADERS,
    ChainContext,
    ChainProblem,
    Change,
    Record,
    field_of,
    null_error,
    side,
    struct_of,
)
from worker.records.transforms.values_text import connect_text

if TYPE_CHECKING:
    from pyspark.sql import Column

DELIMITERS: Final = frozenset(':,{}[]"')
"""Where Connect's `Values` parser splits a literal into tokens."""
FLOAT_MAX: Final = Decimal("3.4028235e38")
DOUBLE_MAX: Final = Decimal("1.7976931348623157e308")
TEMPORAL: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}\.\d{3}Z|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"
)


def headers_column() -> Column:
    """The record's headers, never null."""
    from pyspark.sql import functions as f

    return f.coalesce(f.col(HEADERS), f.array().cast(HEADER_TYPE))


def header(name: str, value: Column) -> Column:
    """One header: its name, and its text (null for none) as UTF-8 bytes."""
    from pyspark.sql import functions as f

    return f.struct(f.lit(name).alias("key"), f.encode(value, "UTF-8").alias("value"))


def with_headers(added: list[Column]) -> Column:
    from pyspark.sql import functions as f

    return f.concat(headers_column(), f.array(*added)) if added else headers_column()


def header_text(column: Column, data_type: DataType) -> Column:
    """A value's header text, as `SimpleHeaderConverter.fromConnectHeader` writes it."""
    return connect_text(column, data_type)


def drop_headers(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    names = f.array(*(f.lit(name) for name in configured.items("headers")))
    kept = f.filter(headers_column(), lambda h: ~f.array_contains(names, h["key"]))
    return Change(headers=kept)


def header_from(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    struct = struct_of(configured, record, part)
    fields = list(configured.items("fields"))
    added = []
    for name, header_name in zip(fields, configured.items("headers"), strict=True):
        field = field_of(configured, struct, name, "fields")
        added.append(header(header_name, header_text(f.col(part)[name], field.dataType)))
    change = Change(
        headers=with_headers(added), error=null_error(part, f"header {_operation(configured)}")
    )
    if _operation(configured) == "copy":
        return change
    kept = [f.col(part)[n].alias(n) for n in struct.fieldNames() if n not in set(fields)]
    return Change(**{part: rebuilt(part, kept)}, headers=change.headers, error=change.error)


def _operation(configured: Configured) -> str:
    return configured.text("operation") or "copy"


def insert_header(configured: Configured, record: Record, context: ChainContext) -> Change:
    text = literal_text(configured)
    return Change(headers=with_headers([header(configured.text("header") or "", text)]))


def literal_text(configured: Configured) -> Column:
    """The header text of `value.literal`: what Connect's `Values.parseString` reads it
    as, written back by `Values.convertToString` (`007` is `7`, `1.50` is `1.5` as a
    float32, `null` no value at all)."""
    from pyspark.sql import functions as f

    literal = configured.text("value.literal") or ""
    token = literal.strip()
    if not literal or not token or token in ("true", "false"):
        return f.lit(literal if token not in ("true", "false") else token)
    if token == "null":
        return f.lit(None).cast("string")
    if TEMPORAL.fullmatch(token) and _valid_temporal(token):
        return f.lit(token)
    if DELIMITERS & set(literal):
        if not token[0].isdigit() and token[0] not in "+-[{":
            return f.lit(literal)
        raise ChainProblem(
            configured.key("value.literal"),
            "a literal that starts with a number or a bracket and holds any of "
            ': , { } [ ] " is not supported (Connect reads arrays, maps and number lists '
            "in it); give a plain string or number",
        )
    number = java_big_decimal(token) if token[0].isdigit() or token[0] in "+-" else None
    if number is None:
        return f.lit(literal)
    return _number_text(number)


def _number_text(number: Decimal) -> Column:
    """`Values.parseAsNumber`: an integer of the smallest type that holds it, written
    plainly; else a float32 (Java's `Float.toString`, which Spark's cast writes); else a
    decimal as `BigDecimal.toString` (which Python's `str` of a Decimal matches)."""
    from pyspark.sql import functions as f

    if number == number.to_integral_value() and -(2**63) <= number < 2**63:
        return f.lit(str(int(number)))
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent != 0 and abs(number) <= FLOAT_MAX:
        return f.lit(str(number)).cast("float").cast("string")
    if exponent != 0 and abs(number) <= DOUBLE_MAX:
        return f.lit(str(number)).cast("double").cast("string")
    return f.lit(str(number))


def _valid_temporal(token: str) -> bool:
    """A date, time or timestamp SimpleDateFormat reads as it is written (an invalid
    one, a 13th month say, it would roll over into another)."""
    formats = {10: "%Y-%m-%d", 13: "%H:%M:%S.%fZ", 24: "%Y-%m-%dT%H:%M:%S.%fZ"}
    try:
        datetime.strptime(token, formats[len(token)])
    except ValueError:
        return False
    return True
