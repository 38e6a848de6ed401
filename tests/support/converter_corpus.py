"""The values the converter differential tests give Connect's converters and sparkherd's:
every Connect type, nested structs, arrays and maps, nulls and optional fields, the
logical types, and the edge values of each (the widest integers, -0.0, subnormals, the
non-finite floats, wide and negative decimals of several scales, dates before 1970, empty
strings, bytes, arrays and maps, text beyond ASCII). Schemas are in the form Connect's
JsonConverter writes into an envelope; values in `tests.support.connect_oracle`'s Python
form.

`as_connect` and `as_spark` move a value between that form and what pyspark collects and
takes; `same` compares two values exactly (a float by its bits, a decimal by its value).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Final

Spec = Mapping[str, Any]

DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
DATE: Final = "org.apache.kafka.connect.data.Date"
TIME: Final = "org.apache.kafka.connect.data.Time"
TIMESTAMP: Final = "org.apache.kafka.connect.data.Timestamp"


def float32(value: float) -> float:
    """`value` as the nearest float32, widened back (what a Java float becomes in Python)."""
    packed: float = struct.unpack(">f", struct.pack(">f", value))[0]
    return packed


def optional(kind: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "optional": True, **more}


def decimal(scale: int, precision: int | None = None, **more: Any) -> dict[str, Any]:
    parameters = {"scale": str(scale)}
    if precision is not None:
        parameters["connect.decimal.precision"] = str(precision)
    return {"type": "bytes", "name": DECIMAL, "version": 1, "parameters": parameters, **more}


NAN: Final = float("nan")
INF: Final = float("inf")
FLOATS: Final = [
    float32(0.1),
    -0.0,
    0.0,
    float32(1.4e-45),  # the smallest subnormal
    float32(1.17549421e-38),  # the largest subnormal
    float32(3.4028235e38),
    INF,
    -INF,
    NAN,
]
DOUBLES: Final = [0.1, -0.0, 5e-324, 2.225073858507201e-308, 1.7976931348623157e308, INF, -INF, NAN]
TEXTS: Final = ["", "naïve ☃ 𝄞 日本", 'quote " backslash \\ newline \n tab \t', "\u0000\u001f"]
BLOBS: Final = [b"", b"\x00", b"\x00\xff\x80\x7f", bytes(range(256))]
DECIMALS_2: Final = [
    Decimal("0.00"),
    Decimal("-12.30"),
    Decimal("0.01"),
    Decimal("-0.01"),
    Decimal("12345678901234567890123456789012345.67"),
    Decimal("-99999999999999999999999999999999999.99"),
]
DECIMALS_0: Final = [
    Decimal(0),
    Decimal(-1),
    Decimal(127),
    Decimal(128),
    Decimal(255),
    Decimal(-128),
    Decimal(-129),
    Decimal(-256),
    Decimal(2**64),
    Decimal(-(2**64)),
    Decimal(2**63),
    Decimal("99999999999999999999999999999999999999"),
    Decimal("-99999999999999999999999999999999999999"),
]
DECIMALS_10: Final = [
    Decimal("0.0000001000"),
    Decimal("-1234567890.0123456789"),
    Decimal("9999999999.9999999999"),
]
DATES: Final = [
    date(1969, 12, 31),
    date(1, 1, 1),
    date(1970, 1, 1),
    date(2024, 2, 29),
    date(9999, 12, 31),
]
TIMES: Final = [time(0, 0), time(23, 59, 59, 999000), time(12, 0, 0, 1000)]
TIMESTAMPS: Final = [
    datetime(1969, 12, 31, 23, 59, 59, 999000, UTC),
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(1900, 1, 1, 0, 0, 0, 1000, UTC),
    datetime(2024, 1, 2, 3, 4, 5, 678000, UTC),
]

ADDRESS: Final = {
    "type": "struct",
    "name": "com.example.Address",
    "optional": True,
    "fields": [
        {"field": "street", "type": "string", "optional": False},
        {"field": "zip", "type": "int32", "optional": True, "doc": "postal code"},
    ],
}
ROW: Final = {
    "type": "struct",
    "name": "com.example.Row",
    "version": 3,
    "doc": "every type in one record",
    "optional": True,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "tiny", "type": "int8", "optional": True},
        {"field": "small", "type": "int16", "optional": True},
        {"field": "count", "type": "int32", "optional": False, "default": 7},
        {"field": "ratio", "type": "float", "optional": True},
        {"field": "price", "type": "double", "optional": True},
        {"field": "active", "type": "boolean", "optional": True},
        {
            "field": "name",
            "type": "string",
            "optional": True,
            "name": "com.example.Name",
            "parameters": {"length": "20"},
        },
        {"field": "raw", "type": "bytes", "optional": True},
        {**decimal(2), "field": "amount", "optional": True},
        {**decimal(4, 20), "field": "rate", "optional": False},
        {"field": "day", "type": "int32", "name": DATE, "version": 1, "optional": True},
        {"field": "at", "type": "int64", "name": TIMESTAMP, "version": 1, "optional": True},
        {"field": "clock", "type": "int32", "name": TIME, "version": 1, "optional": True},
        {**ADDRESS, "field": "home"},
        {"field": "tags", "type": "array", "items": optional("string"), "optional": True},
        {
            "field": "addresses",
            "type": "array",
            "items": {**ADDRESS, "optional": False},
            "optional": False,
        },
        {
            "field": "scores",
            "type": "map",
            "keys": {"type": "string", "optional": False},
            "values": optional("array", items={**decimal(2), "optional": True}),
            "optional": True,
        },
        {
            "field": "by_code",
            "type": "map",
            "keys": {"type": "int16", "optional": False},
            "values": {**ADDRESS, "optional": True},
            "optional": True,
        },
        {
            "field": "days",
            "type": "map",
            "keys": {"type": "int32", "name": DATE, "version": 1, "optional": False},
            "values": {**decimal(0), "optional": True},
            "optional": True,
        },
    ],
}
FULL_ROW: Final[dict[str, Any]] = {
    "id": -(2**63),
    "tiny": -128,
    "small": 32767,
    "count": 2**31 - 1,
    "ratio": float32(-0.0),
    "price": -5e-324,
    "active": False,
    "name": "naïve ☃",
    "raw": b"\x00\xff",
    "amount": Decimal("-12.30"),
    "rate": Decimal("1234567890123456.7890"),
    "day": date(1969, 7, 20),
    "at": datetime(1969, 7, 20, 20, 17, 40, 123000, UTC),
    "clock": time(20, 17, 40, 123000),
    "home": {"street": "", "zip": None},
    "tags": [],
    "addresses": [{"street": "Main St 1", "zip": 12345}, {"street": "日本", "zip": -1}],
    "scores": {"a": [Decimal("0.01"), None]},
    "by_code": {-32768: {"street": "x", "zip": 0}},
    "days": {date(1900, 1, 1): Decimal(-1)},
}
"""Its maps have one entry each, so that its bytes have one order (Connect's maps are hash
maps); the map cases below have several."""
SPARSE_ROW: Final[dict[str, Any]] = {
    "id": 2**63 - 1,
    "tiny": None,
    "small": None,
    "count": 0,
    "ratio": None,
    "price": None,
    "active": None,
    "name": None,
    "raw": None,
    "amount": None,
    "rate": Decimal("-0.0001"),
    "day": None,
    "at": None,
    "clock": None,
    "home": None,
    "tags": None,
    "addresses": [],
    "scores": {},
    "by_code": {},
    "days": None,
}


@dataclass(frozen=True)
class Case:
    """A schema and the values of it each converter is given."""

    name: str
    schema: Spec
    values: Sequence[object]

    @property
    def has_decimals(self) -> bool:
        return DECIMAL in repr(self.schema)


def one_order(spec: Spec, value: Any) -> bool:
    """Whether `value` holds no map of more than one entry, so that its JSON has one order
    (Connect's maps are hash maps)."""
    if value is None:
        return True
    kind = spec["type"]
    if kind == "map":
        return len(value) <= 1 and all(one_order(spec["values"], v) for v in value.values())
    if kind == "array":
        return all(one_order(spec["items"], item) for item in value)
    if kind == "struct":
        return all(one_order(f, value.get(f["field"])) for f in spec["fields"])
    return True


JSON_CASES: Final = [
    Case("int8", optional("int8"), [-128, 127, 0, None]),
    Case("int16", optional("int16"), [-32768, 32767, -1]),
    Case("int32", optional("int32"), [-(2**31), 2**31 - 1, 0]),
    Case("int64", optional("int64"), [-(2**63), 2**63 - 1, 2**53 + 1, None]),
    Case("float", optional("float"), FLOATS),
    Case("double", optional("double"), DOUBLES),
    Case("boolean", optional("boolean"), [True, False, None]),
    Case("string", optional("string"), [*TEXTS, None]),
    Case("bytes", optional("bytes"), [*BLOBS, None]),
    Case("decimal-2", decimal(2, optional=True), [*DECIMALS_2, None]),
    Case("decimal-0-38", decimal(0, 38, optional=False), DECIMALS_0),
    Case("decimal-10-20", decimal(10, 20, optional=False), DECIMALS_10),
    Case("date", {"type": "int32", "name": DATE, "version": 1, "optional": True}, DATES),
    Case("time", {"type": "int32", "name": TIME, "version": 1, "optional": False}, TIMES),
    Case(
        "timestamp",
        {"type": "int64", "name": TIMESTAMP, "version": 1, "optional": False},
        TIMESTAMPS,
    ),
    Case("array", optional("array", items=optional("string")), [[], ["a", None, ""], None]),
    Case(
        "array-of-arrays",
        optional("array", items={"type": "array", "items": optional("double")}),
        [[[]], [[1.5, None], [NAN, -0.0]]],
    ),
    Case(
        "map-string-keys",
        optional("map", keys={"type": "string"}, values=optional("int64")),
        [{}, {"a": 1, "": None, "ü": -(2**63)}, None],
    ),
    Case(
        "map-int-keys",
        optional("map", keys={"type": "int32"}, values=optional("string")),
        [{}, {1: "x", -2: None, 2**31 - 1: ""}, None],
    ),
    Case(
        "map-date-keys",
        optional(
            "map",
            keys={"type": "int32", "name": DATE, "version": 1},
            values={**decimal(3), "optional": True},
        ),
        [{date(1900, 1, 1): Decimal("-1.000"), date(2024, 2, 29): None}],
    ),
    Case(
        "map-double-keys",
        optional("map", keys={"type": "double"}, values={"type": "boolean"}),
        [{1.5: True, -0.0: False, 1e300: True}],
    ),
    Case(
        "map-boolean-keys-of-maps",
        optional(
            "map",
            keys={"type": "boolean"},
            values=optional("map", keys={"type": "int8"}, values=optional("bytes")),
        ),
        [{True: {}, False: {1: b"", -1: None, 0: b"\x00\xff"}}],
    ),
    Case("row", ROW, [FULL_ROW, SPARSE_ROW, None]),
    Case(
        "struct-kept-whole",
        {
            "type": "struct",
            "optional": False,
            "fields": [
                {
                    "field": 'naïve 𝄞 "quoted"',
                    "type": "string",
                    "optional": True,
                    "name": "x.y",
                    "doc": "line\nbreak \u0001 ☃ 😀",
                },
                {"field": "d", "type": "double", "optional": False, "default": 1.5},
            ],
        },
        [{'naïve 𝄞 "quoted"': "😀", "d": 1e300}, {'naïve 𝄞 "quoted"': None, "d": -1.5}],
    ),
]
KEY_CASES: Final = [c for c in JSON_CASES if c.name in ("int64", "string", "decimal-2", "row")]
"""What keys are tested with: the usual key types, and a struct."""

FIXED_CASES: Final = {
    "org.apache.kafka.connect.converters.ShortConverter": Case(
        "short", optional("int16"), [-32768, 32767, 0, -1, 256, None]
    ),
    "org.apache.kafka.connect.converters.IntegerConverter": Case(
        "integer", optional("int32"), [-(2**31), 2**31 - 1, 0, -1, 65536, None]
    ),
    "org.apache.kafka.connect.converters.LongConverter": Case(
        "long", optional("int64"), [-(2**63), 2**63 - 1, 0, -1, 2**32, None]
    ),
    "org.apache.kafka.connect.converters.FloatConverter": Case(
        "float", optional("float"), [*FLOATS, None]
    ),
    "org.apache.kafka.connect.converters.DoubleConverter": Case(
        "double", optional("double"), [*DOUBLES, None]
    ),
    "org.apache.kafka.connect.converters.BooleanConverter": Case(
        "boolean", optional("boolean"), [True, False, None]
    ),
    "org.apache.kafka.connect.storage.StringConverter": Case(
        "string", optional("string"), [*TEXTS, None]
    ),
    "org.apache.kafka.connect.converters.ByteArrayConverter": Case(
        "bytes", optional("bytes"), [*BLOBS, None]
    ),
}
"""The converters of one plain value, each with the values of its type."""

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def _logical(spec: Spec) -> str | None:
    name = spec.get("name")
    return name if name in (DECIMAL, DATE, TIME, TIMESTAMP) else None


def as_connect(spec: Spec, value: Any) -> Any:
    """A value pyspark collected (of the Spark type sparkherd reads `spec` into) in the
    oracle's form."""
    if value is None:
        return None
    logical = _logical(spec)
    if logical == TIME:
        return (_EPOCH + timedelta(milliseconds=value)).time()
    if logical == TIMESTAMP:
        return value.astimezone(UTC)  # pyspark's naive datetimes are local times
    if logical is not None:
        return value
    kind = spec["type"]
    if kind == "bytes":
        return bytes(value)
    if kind == "array":
        return [as_connect(spec["items"], item) for item in value]
    if kind == "map":
        return {
            as_connect(spec["keys"], k): as_connect(spec["values"], v) for k, v in value.items()
        }
    if kind == "struct":
        return {f["field"]: as_connect(f, value[f["field"]]) for f in spec["fields"]}
    return value


def as_spark(spec: Spec, value: Any) -> Any:
    """A value in the oracle's form as pyspark takes one of the Spark type of `spec`."""
    if value is None:
        return None
    logical = _logical(spec)
    if logical == TIME:
        return (value.hour * 3600 + value.minute * 60 + value.second) * 1000 + (
            value.microsecond // 1000
        )
    if logical is not None:
        return value
    kind = spec["type"]
    if kind == "array":
        return [as_spark(spec["items"], item) for item in value]
    if kind == "map":
        return {as_spark(spec["keys"], k): as_spark(spec["values"], v) for k, v in value.items()}
    if kind == "struct":
        return tuple(as_spark(f, value.get(f["field"])) for f in spec["fields"])
    return value


def same(left: Any, right: Any) -> bool:
    """Equal values, a float by its bits (NaN is NaN, -0.0 is not 0.0), a decimal by its
    value (12.3 is 12.30)."""
    if isinstance(left, float) and isinstance(right, float):
        if math.isnan(left) or math.isnan(right):
            return math.isnan(left) and math.isnan(right)
        return left == right and math.copysign(1, left) == math.copysign(1, right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same(v, right[k]) for k, v in left.items())
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(same, left, right))
    return type(left) is type(right) and bool(left == right)
