"""Connect's routing, filtering and header transforms and its predicates, and Debezium's
ExtractNewRecordState, against sparkherd's: the same records through Connect's own
classes (the oracle) and through sparkherd's chain in a real Spark are routed, dropped,
given headers (as Connect's default header converter writes them) and unwrapped alike,
or fail alike (`tests.support.chain_differential`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import pytest
from pyspark.sql import SparkSession

from tests.support.chain_differential import compare
from tests.support.chain_records import P, T, chain, new_york_spark, records
from tests.support.connect_oracle import ConnectOracle, Record

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

UNWRAP: Final = "io.debezium.transforms.ExtractNewRecordState"


@pytest.fixture(scope="module")
def oracle() -> Iterator[ConnectOracle]:
    with ConnectOracle.start(debezium=True) as started:
        yield started


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with new_york_spark("transform-differential-routing") as session:
        yield session


CASES: Final = {
    "regex-router": chain(
        ("r", f"{T}RegexRouter", {"regex": "ord(er)s|x", "replacement": "routed-$1"})
    ),
    "timestamp-router": chain(
        (
            "r",
            f"{T}TimestampRouter",
            {"topic.format": "${topic}_${timestamp}_${topic}", "timestamp.format": "yyyy.MM.dd-HH"},
        )
    ),
    "filter-tombstones": chain(
        ("f", f"{T}Filter", {"predicate": "tomb"}),
        predicates="tomb",
        predicates__tomb__type=f"{P}RecordIsTombstone",
    ),
    "filter-not-header": chain(
        ("f", f"{T}Filter", {"predicate": "h", "negate": "true"}),
        predicates="h",
        predicates__h__type=f"{P}HasHeaderKey",
        predicates__h__name="trace",
    ),
    "topic-predicate": chain(
        ("r", f"{T}RegexRouter", {"regex": ".*", "replacement": "all", "predicate": "t"}),
        predicates="t",
        predicates__t__type=f"{P}TopicNameMatches",
        predicates__t__pattern="ord.*",
    ),
    "drop-headers": chain(("d", f"{T}DropHeaders", {"headers": "h,absent"})),
    "insert-header": chain(
        ("i", f"{T}InsertHeader", {"header": "n", "value.literal": "007"}),
        ("j", f"{T}InsertHeader", {"header": "f", "value.literal": "1.50"}),
        ("k", f"{T}InsertHeader", {"header": "s", "value.literal": "plain text"}),
        ("l", f"{T}InsertHeader", {"header": "b", "value.literal": "true"}),
        ("m", f"{T}InsertHeader", {"header": "z", "value.literal": "null"}),
        ("n", f"{T}InsertHeader", {"header": "e", "value.literal": "1e3"}),
        ("o", f"{T}InsertHeader", {"header": "d", "value.literal": "2024-01-02"}),
        ("p", f"{T}InsertHeader", {"header": "t", "value.literal": "12:30:00.000Z"}),
        ("q", f"{T}InsertHeader", {"header": "l", "value.literal": "a,b"}),
        ("r", f"{T}InsertHeader", {"header": "w", "value.literal": "-2147483649"}),
    ),
    "header-from-copy": chain(
        (
            "h",
            f"{T}HeaderFrom$Value",
            {
                "fields": "id,name,price,amount,day,at,tags,flag,raw,address",
                "headers": "a,b,c,d,e,f,g,h,i,j",
                "operation": "copy",
            },
        )
    ),
    "header-from-key": chain(
        ("h", f"{T}HeaderFrom$Key", {"fields": "id,region", "headers": "i,r", "operation": "move"})
    ),
    "header-from-move": chain(
        ("h", f"{T}HeaderFrom$Value", {"fields": "name", "headers": "name", "operation": "move"})
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_routes_filters_and_headers(oracle: ConnectOracle, spark: SparkSession, case: str) -> None:
    compare(oracle, spark, CASES[case], records(struct_key=case.endswith("-key")))


def _row_schema(name: str) -> dict[str, Any]:
    return {
        "type": "struct",
        "name": name,
        "optional": True,
        "fields": [
            {"field": "id", "type": "int32", "optional": False},
            {"field": "first_name", "type": "string", "optional": True},
            {"field": "email", "type": "string", "optional": True},
        ],
    }


ENVELOPE: Final = {
    "type": "struct",
    "name": "dbserver1.inventory.customers.Envelope",
    "optional": False,
    "fields": [
        {**_row_schema("dbserver1.inventory.customers.Value"), "field": "before"},
        {**_row_schema("dbserver1.inventory.customers.Value"), "field": "after"},
        {
            "field": "source",
            "type": "struct",
            "name": "io.debezium.connector.postgresql.Source",
            "optional": False,
            "fields": [
                {"field": "connector", "type": "string", "optional": False},
                {"field": "ts_ms", "type": "int64", "optional": False},
                {"field": "db", "type": "string", "optional": False},
                {"field": "table", "type": "string", "optional": False},
                {"field": "lsn", "type": "int64", "optional": True},
            ],
        },
        {"field": "op", "type": "string", "optional": False},
        {"field": "ts_ms", "type": "int64", "optional": True},
        {
            "field": "transaction",
            "type": "struct",
            "optional": True,
            "fields": [
                {"field": "id", "type": "string", "optional": False},
                {"field": "total_order", "type": "int64", "optional": False},
                {"field": "data_collection_order", "type": "int64", "optional": False},
            ],
        },
    ],
}
KEY_SCHEMA: Final = {
    "type": "struct",
    "name": "dbserver1.inventory.customers.Key",
    "optional": False,
    "fields": [{"field": "id", "type": "int32", "optional": False}],
}


def change_events() -> list[Record]:
    """A table's life as Debezium's PostgreSQL connector writes it: a snapshot read, a
    create, an update, a delete and its tombstone, a truncate."""

    def row(n: int, name: str | None) -> dict[str, Any]:
        return {"id": n, "first_name": name, "email": None if name is None else f"{name}@x"}

    def source(lsn: int | None) -> dict[str, Any]:
        table = {"db": "inventory", "table": "customers"}
        return {"connector": "postgresql", "ts_ms": 1_700_000_000_000, **table, "lsn": lsn}

    transaction = {"id": "571:1", "total_order": 1, "data_collection_order": 1}
    events: list[tuple[int, str, dict[str, Any] | None, dict[str, Any] | None, Any]] = [
        (1001, "r", None, row(1001, "Sally"), None),
        (1002, "c", None, row(1002, "George"), transaction),
        (1002, "u", row(1002, "George"), row(1002, None), transaction),
        (1001, "d", row(1001, "Sally"), None, None),
    ]
    found = [
        Record(
            "dbserver1.inventory.customers",
            ENVELOPE,
            {
                "before": before,
                "after": after,
                "source": source(None if n % 2 else 23_000 + n),
                "op": op,
                "ts_ms": 1_700_000_000_100 + n,
                "transaction": trx,
            },
            key_schema=KEY_SCHEMA,
            key={"id": key},
            offset=n,
            timestamp=1_700_000_000_200 + n,
        )
        for n, (key, op, before, after, trx) in enumerate(events)
    ]
    tombstone = Record(
        "dbserver1.inventory.customers", None, None, KEY_SCHEMA, {"id": 1001}, offset=4
    )
    truncate = Record(
        "dbserver1.inventory.customers",
        ENVELOPE,
        {
            "before": None,
            "after": None,
            "source": source(1),
            "op": "t",
            "ts_ms": 1,
            "transaction": None,
        },
        offset=5,
    )
    return [*found, tombstone, truncate]


ADDED: Final = {
    "add.fields": "op,table,source.ts_ms,lsn:LSN,transaction.id,ts_ms,absent",
    "add.headers": "op,db,ts_ms,transaction.total_order",
}
MODES: Final = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("added", [{}, ADDED], ids=["plain", "added"])
def test_extract_new_record_state(
    oracle: ConnectOracle, spark: SparkSession, mode: str, added: dict[str, str]
) -> None:
    settings = {"delete.tombstone.handling.mode": mode, **added}
    compare(oracle, spark, chain(("unwrap", UNWRAP, settings)), change_events())


@pytest.mark.parametrize(
    ("legacy", "mode"),
    [
        ({}, "drop"),
        ({"drop.tombstones": "true", "delete.handling.mode": "none"}, "tombstone"),
        ({"delete.handling.mode": "rewrite"}, "rewrite"),
        ({"drop.tombstones": "false", "delete.handling.mode": "rewrite"}, "rewrite-with-tombstone"),
    ],
)
def test_debezium_2_settings_read_as_the_mode_they_equal(
    oracle: ConnectOracle, spark: SparkSession, legacy: dict[str, str], mode: str
) -> None:
    """Debezium 3 ignores `drop.tombstones` and `delete.handling.mode` (it removed them);
    sparkherd reads each pair Debezium 2 had as the mode that does the same, so the
    config of a Debezium 2 user does what it did."""
    if not legacy:
        legacy = {"drop.tombstones": "true"}
    ours = chain(("unwrap", UNWRAP, legacy))
    theirs = chain(("unwrap", UNWRAP, {"delete.tombstone.handling.mode": mode}))
    compare(oracle, spark, ours, change_events(), connect_config=theirs)


@pytest.mark.parametrize(
    ("legacy", "mode"),
    [
        ({"drop.tombstones": "false"}, "drop"),
        ({"drop.tombstones": "false", "delete.handling.mode": "none"}, "tombstone"),
    ],
)
def test_debezium_2_settings_that_keep_tombstones(
    oracle: ConnectOracle, spark: SparkSession, legacy: dict[str, str], mode: str
) -> None:
    """`drop.tombstones=false` beside `delete.handling.mode` `drop` (its default) or
    `none`, the JDBC sinks' hard-delete recipes of Debezium 2, have no mode in Debezium 3:
    they run as Debezium 2 ran them, which is Debezium 3's `mode` on every record but a
    tombstone, and the tombstone kept (`RecordIsTombstone`, negated, in Connect's chain)."""
    ours = chain(("unwrap", UNWRAP, legacy))
    theirs = chain(
        (
            "unwrap",
            UNWRAP,
            {"delete.tombstone.handling.mode": mode, "predicate": "tomb", "negate": "true"},
        ),
        predicates="tomb",
        predicates__tomb__type=f"{P}RecordIsTombstone",
    )
    compare(oracle, spark, ours, change_events(), connect_config=theirs)


def test_route_by_field_and_other_records(oracle: ConnectOracle, spark: SparkSession) -> None:
    config = chain(("unwrap", UNWRAP, {"route.by.field": "first_name"}))
    compare(oracle, spark, config, change_events())
    compare(oracle, spark, chain(("unwrap", UNWRAP, {})), records())
