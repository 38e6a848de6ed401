"""The oracle the differential tests compare sparkherd with (tests/support/connect_oracle.py)
holds what it is given: a value of every Connect type written by Connect's JsonConverter
reads back equal, and a transform sees the record as built. If this fails, a differential
test's failure says nothing about sparkherd."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time
from decimal import Decimal

import pytest

from tests.support.connect_oracle import ConnectOracle, Record, Stage

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
ROW = {
    "type": "struct",
    "name": "Row",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "small", "type": "int8", "optional": True},
        {"field": "price", "type": "double", "optional": True},
        {"field": "ratio", "type": "float", "optional": True},
        {
            "field": "amount",
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2"},
            "optional": True,
        },
        {"field": "day", "type": "int32", "name": "org.apache.kafka.connect.data.Date"},
        {"field": "at", "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
        {"field": "t", "type": "int32", "name": "org.apache.kafka.connect.data.Time"},
        {"field": "m", "type": "map", "keys": {"type": "int32"}, "values": {"type": "string"}},
        {"field": "tags", "type": "array", "items": {"type": "string", "optional": True}},
        {"field": "raw", "type": "bytes", "optional": True},
    ],
}
VALUE = {
    "id": 2**40,
    "small": -3,
    "price": 1e300,
    "ratio": 0.25,
    "amount": Decimal("-12.30"),
    "day": date(2024, 2, 29),
    "at": datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
    "t": time(1, 2, 3, 456000),
    "m": {1: "a", -2: "b"},
    "tags": ["x", None],
    "raw": b"\x00\xff",
}


@pytest.fixture(scope="module")
def oracle() -> Iterator[ConnectOracle]:
    with ConnectOracle.start(debezium=True) as started:
        yield started


@pytest.mark.parametrize("decimals", ["BASE64", "NUMERIC"])
def test_what_connect_writes_it_reads_back(oracle: ConnectOracle, decimals: str) -> None:
    converter = oracle.converter(JSON_CONVERTER, {"decimal.format": decimals})
    written = oracle.write(converter, "orders", ROW, VALUE)
    schema, value = oracle.read(converter, "orders", written)
    assert value == VALUE
    assert schema is not None and [f["field"] for f in schema["fields"]] == list(VALUE)


def test_a_chain_applies_where_its_predicate_says(oracle: ConnectOracle) -> None:
    mask = oracle.transformation(
        "org.apache.kafka.connect.transforms.MaskField$Value", {"fields": "small"}
    )
    other_topics = oracle.transformation(
        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches", {"pattern": "other"}
    )
    record = Record(
        "orders",
        ROW,
        VALUE,
        timestamp=1_000,
        headers=(("h", {"type": "string", "optional": False}, "v"),),
    )
    masked = oracle.apply([Stage(mask)], record)
    assert masked is not None and masked.value == {**VALUE, "small": 0}
    assert masked.headers == record.headers and masked.timestamp == 1_000
    assert oracle.apply([Stage(mask, other_topics)], record) == oracle.apply([], record)
    assert oracle.apply([Stage(mask, other_topics, negate=True)], record) == masked


def test_debeziums_transforms_load(oracle: ConnectOracle) -> None:
    unwrap = oracle.transformation("io.debezium.transforms.ExtractNewRecordState", {})
    assert str(unwrap.getClass().getName()) == "io.debezium.transforms.ExtractNewRecordState"
