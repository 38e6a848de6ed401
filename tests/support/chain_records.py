"""Records and chains the differential tests of transforms share: schema'd records of
most Connect types (a tombstone among them, headers on some, one without a timestamp),
schemaless ones as JsonConverter reads them without schemas, and a connector config's
chain keys built from (alias, class, settings) stages."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Final

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from tests.support.connect_oracle import Record
from tests.support.in_process_spark import in_process_spark

T: Final = "org.apache.kafka.connect.transforms."
P: Final = f"{T}predicates."
DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
ADDRESS: Final = {
    "type": "struct",
    "optional": True,
    "field": "address",
    "fields": [
        {"field": "city", "type": "string", "optional": True},
        {"field": "zip", "type": "string", "optional": True},
    ],
}
ROW: Final = {
    "type": "struct",
    "name": "shop.Row",
    "optional": True,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "name", "type": "string", "optional": True},
        {"field": "price", "type": "double", "optional": True},
        {"field": "qty", "type": "int32", "optional": True},
        {"field": "small", "type": "int8", "optional": True},
        {"field": "ratio", "type": "float", "optional": True},
        {
            "field": "amount",
            "type": "bytes",
            "name": DECIMAL,
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "optional": True,
        },
        {
            "field": "day",
            "type": "int32",
            "name": "org.apache.kafka.connect.data.Date",
            "optional": True,
        },
        {
            "field": "at",
            "type": "int64",
            "name": "org.apache.kafka.connect.data.Timestamp",
            "optional": True,
        },
        {
            "field": "tags",
            "type": "array",
            "items": {"type": "string", "optional": True},
            "optional": True,
        },
        {"field": "raw", "type": "bytes", "optional": True},
        {"field": "flag", "type": "boolean", "optional": True},
        {"field": "text", "type": "string", "optional": True},
        ADDRESS,
    ],
}
KEY: Final = {"type": "string", "optional": True}
STRUCT_KEY: Final = {
    "type": "struct",
    "optional": True,
    "fields": [
        {"field": "id", "type": "int64", "optional": True},
        {"field": "region", "type": "string", "optional": True},
    ],
}


def row(n: int, **changed: Any) -> dict[str, Any]:
    values = {
        "id": n,
        "name": None if n % 4 == 3 else f"item-{n}",
        "price": [1.5, -0.25, 1e300, float("nan"), 12345678.9][n % 5],
        "qty": [0, -7, 2**31 - 1, None, 300][n % 5],
        "small": [-3, None, 127, 5, 0][n % 5],
        "ratio": [0.25, 3.5, None, -1.0, 0.1][n % 5],
        "amount": [
            Decimal("12.30"),
            Decimal("-0.05"),
            None,
            Decimal("99999999.99"),
            Decimal("0.00"),
        ][n % 5],
        "day": [date(2024, 2, 29), date(1970, 1, 1), None, date(1969, 12, 31), date(2000, 1, 1)][
            n % 5
        ],
        "at": [
            datetime(2024, 1, 2, 3, 4, 5, 678000, UTC),
            datetime(1970, 1, 1, tzinfo=UTC),
            None,
            datetime(2023, 12, 31, 23, 59, 59, 999000, UTC),
            datetime(2024, 3, 10, 7, 30, tzinfo=UTC),
        ][n % 5],
        "tags": [["a", None], [], None, ["x"], ["b", "c"]][n % 5],
        "raw": [b"\x00\xff", None, b"", b"abc", b"\x10"][n % 5],
        "flag": [True, False, None, True, False][n % 5],
        "text": ["42", "-17", "abc", " 12 ", "3.5e2"][n % 5],
        "address": [
            {"city": "Oslo", "zip": "0150"},
            None,
            {"city": None, "zip": "x"},
            {"city": "Å", "zip": None},
            {"city": "B", "zip": "9"},
        ][n % 5],
    }
    return {**values, **changed}


def records(count: int = 6, *, topic: str = "orders", struct_key: bool = False) -> list[Record]:
    """Schema'd records, the third a tombstone, with headers."""
    found = []
    for n in range(count):
        tombstone = n == 2
        key: object = {"id": n, "region": "eu" if n % 2 else None} if struct_key else f"k{n}"
        found.append(
            Record(
                topic=topic,
                value_schema=None if tombstone else ROW,
                value=None if tombstone else row(n),
                key_schema=STRUCT_KEY if struct_key else KEY,
                key=key,
                partition=n % 3,
                offset=n,
                timestamp=None if n == 4 else 1_700_000_000_000 + n * 86_399_999,
                headers=(("h", None, f"v{n}"), ("trace", None, "t")) if n % 2 else (),
            )
        )
    return found


SCHEMALESS_TYPE: Final = StructType(
    [
        StructField("id", LongType()),
        StructField("name", StringType()),
        StructField("price", DoubleType()),
        StructField("text", StringType()),
        StructField("address", StructType([StructField("city", StringType())])),
    ]
)


def schemaless(count: int = 5) -> list[Record]:
    """Records as JsonConverter reads them with schemas.enable=false."""
    return [
        Record(
            topic="events",
            value_schema=None,
            value=None
            if n == 3
            else {
                "id": n,
                "name": f"n{n}",
                "price": n * 1.25,
                "text": ["7", "x", "2024-01-02", "", "1"][n],
                "address": {"city": f"c{n}"},
            },
            key_schema=None,
            key=None,
            offset=n,
            timestamp=1_700_000_000_000 + n,
        )
        for n in range(count)
    ]


def chain(*stages: tuple[str, str, dict[str, str]], **extra: str) -> dict[str, str]:
    """A connector config's chain keys: stages of (alias, class, settings)."""
    config = {"transforms": ",".join(alias for alias, _, _ in stages)}
    for alias, class_name, settings in stages:
        config[f"transforms.{alias}.type"] = class_name
        config.update({f"transforms.{alias}.{k}": v for k, v in settings.items()})
    return {**config, **{k.replace("__", "."): v for k, v in extra.items()}}


@contextlib.contextmanager
def new_york_spark(app_name: str) -> Iterator[SparkSession]:
    """A session in New York time: what Connect does in UTC is seen done in UTC."""
    with in_process_spark(app_name, {"spark.master": "local[2]"}) as session:
        here = session.newSession()
        here.conf.set("spark.sql.session.timeZone", "America/New_York")
        yield here
