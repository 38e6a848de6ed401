"""Connect's transforms of fields, types and timestamps against sparkherd's: the same
records (schema'd and schemaless, tombstones, nulls, nested structs) through Connect's
own classes (the oracle) and through sparkherd's chain in a real Spark give the same
records, or fail alike (`tests.support.chain_differential`). The Spark session runs in
New York time, so that what Connect does in UTC is seen to be done in UTC here too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import pytest
from pyspark.sql import SparkSession

from tests.support.chain_differential import compare
from tests.support.chain_records import (
    SCHEMALESS_TYPE,
    T,
    chain,
    new_york_spark,
    records,
    schemaless,
)
from tests.support.connect_oracle import ConnectOracle

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


@pytest.fixture(scope="module")
def oracle() -> Iterator[ConnectOracle]:
    with ConnectOracle.start(debezium=True) as started:
        yield started


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with new_york_spark("transform-differential") as session:
        yield session


SCHEMAD_CASES: Final = {
    "mask-value": chain(
        (
            "m",
            f"{T}MaskField$Value",
            {"fields": "name,price,qty,amount,day,at,tags,flag,small,ratio"},
        )
    ),
    "mask-replacement": chain(
        ("m", f"{T}MaskField$Value", {"fields": "name,qty,small,price,ratio", "replacement": "1e2"})
    ),
    "mask-key": chain(("m", f"{T}MaskField$Key", {"fields": "region"})),
    "replace-exclude-rename": chain(
        ("r", f"{T}ReplaceField$Value", {"exclude": "raw,tags", "renames": "name:title,id:key_id"})
    ),
    "replace-include": chain(
        ("r", f"{T}ReplaceField$Value", {"include": "id,address", "exclude": "address"})
    ),
    "insert-value": chain(
        (
            "i",
            f"{T}InsertField$Value",
            {
                "topic.field": "t",
                "partition.field": "p!",
                "offset.field": "o",
                "timestamp.field": "ts",
                "static.field": "s",
                "static.value": "fixed",
            },
        )
    ),
    "insert-key": chain(("i", f"{T}InsertField$Key", {"offset.field": "o"})),
    "hoist-key": chain(("h", f"{T}HoistField$Key", {"field": "k"})),
    "hoist-value": chain(("h", f"{T}HoistField$Value", {"field": "row"})),
    "extract-value": chain(("e", f"{T}ExtractField$Value", {"field": "price"})),
    "extract-nested": chain(
        ("e", f"{T}ExtractField$Value", {"field": "address.city", "field.syntax.version": "V2"})
    ),
    "extract-key": chain(("e", f"{T}ExtractField$Key", {"field": "region"})),
    "value-to-key": chain(("v", f"{T}ValueToKey", {"fields": "id,name"})),
    "flatten": chain(("f", f"{T}Flatten$Value", {"delimiter": "_"})),
    "flatten-key": chain(("f", f"{T}Flatten$Key", {})),
    "cast-fields": chain(
        (
            "c",
            f"{T}Cast$Value",
            {
                "spec": "price:int32,qty:int8,small:string,ratio:int64,amount:float64,"
                "flag:int16,id:boolean,day:int32,at:string"
            },
        )
    ),
    "cast-floats-strings": chain(
        (
            "c",
            f"{T}Cast$Value",
            {"spec": "price:string,ratio:string,amount:string,day:string,raw:string,qty:float32"},
        )
    ),
    "cast-text-int": chain(("c", f"{T}Cast$Value", {"spec": "text:int32"})),
    "cast-text-float": chain(("c", f"{T}Cast$Value", {"spec": "text:float64"})),
    "cast-text-boolean": chain(
        ("c", f"{T}Cast$Value", {"spec": "text:boolean,price:boolean,amount:boolean"})
    ),
    "cast-whole-key": chain(("c", f"{T}Cast$Key", {"spec": "string"})),
    "timestamp-to-string": chain(
        (
            "t",
            f"{T}TimestampConverter$Value",
            {"field": "at", "target.type": "string", "format": "yyyy-MM-dd HH:mm:ss.SSS Z"},
        )
    ),
    "timestamp-to-words": chain(
        (
            "t",
            f"{T}TimestampConverter$Value",
            {"field": "at", "target.type": "string", "format": "EEE, d MMM yyyy hh:mm a z XXX D"},
        )
    ),
    "zoned-string-to-timestamp": chain(
        (
            "c",
            f"{T}TimestampConverter$Value",
            {"field": "at", "target.type": "string", "format": "yyyy-MM-dd HH:mm:ss.SSS Z"},
        ),
        (
            "t",
            f"{T}TimestampConverter$Value",
            {"field": "at", "target.type": "Timestamp", "format": "yyyy-MM-dd HH:mm:ss.SSS Z"},
        ),
    ),
    "timestamp-to-unix": chain(
        (
            "t",
            f"{T}TimestampConverter$Value",
            {"field": "at", "target.type": "unix", "unix.precision": "microseconds"},
        )
    ),
    "date-to-timestamp": chain(
        ("t", f"{T}TimestampConverter$Value", {"field": "day", "target.type": "Timestamp"})
    ),
    "timestamp-to-date": chain(
        ("t", f"{T}TimestampConverter$Value", {"field": "at", "target.type": "Date"})
    ),
    "string-to-timestamp": chain(
        ("c", f"{T}Cast$Value", {"spec": "at:string"}),
        (
            "t",
            f"{T}TimestampConverter$Value",
            {"field": "at", "target.type": "unix", "format": "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"},
        ),
    ),
    "set-schema-metadata": chain(
        ("s", f"{T}SetSchemaMetadata$Value", {"schema.name": "shop.Renamed", "schema.version": "3"})
    ),
    "chain-of-three": chain(
        ("r", f"{T}ReplaceField$Value", {"include": "id,price,name,qty"}),
        ("c", f"{T}Cast$Value", {"spec": "price:float32,qty:int64"}),
        (
            "i",
            f"{T}InsertField$Value",
            {"offset.field": "o", "static.field": "s", "static.value": "v"},
        ),
    ),
}


KEY_CASES: Final = {
    "replace-key": chain(("r", f"{T}ReplaceField$Key", {"renames": "region:zone"})),
    "cast-key-field": chain(("c", f"{T}Cast$Key", {"spec": "id:string"})),
    "timestamp-key": chain(
        ("t", f"{T}TimestampConverter$Key", {"field": "id", "target.type": "Timestamp"})
    ),
    "set-schema-metadata-key": chain(("s", f"{T}SetSchemaMetadata$Key", {"schema.version": "7"})),
}
SCHEMAD_CASES.update(KEY_CASES)
STRUCT_KEY_CASES: Final = frozenset(
    {"mask-key", "insert-key", "extract-key", "flatten-key", *KEY_CASES}
)


@pytest.mark.parametrize("case", sorted(SCHEMAD_CASES))
def test_schemad_records(oracle: ConnectOracle, spark: SparkSession, case: str) -> None:
    compare(oracle, spark, SCHEMAD_CASES[case], records(struct_key=case in STRUCT_KEY_CASES))


SCHEMALESS_CASES: Final = {
    "mask": chain(("m", f"{T}MaskField$Value", {"fields": "name,price,id"})),
    "replace": chain(("r", f"{T}ReplaceField$Value", {"exclude": "price", "renames": "name:n"})),
    "insert": chain(
        (
            "i",
            f"{T}InsertField$Value",
            {"topic.field": "t", "timestamp.field": "ts", "offset.field": "o"},
        )
    ),
    "hoist": chain(("h", f"{T}HoistField$Value", {"field": "wrapped"})),
    "extract": chain(("e", f"{T}ExtractField$Value", {"field": "name"})),
    "value-to-key": chain(("v", f"{T}ValueToKey", {"fields": "id"})),
    "flatten": chain(("f", f"{T}Flatten$Value", {})),
    "cast": chain(("c", f"{T}Cast$Value", {"spec": "id:int8,price:string,text:int64"})),
    "timestamp-string": chain(
        (
            "t",
            f"{T}TimestampConverter$Value",
            {"field": "text", "target.type": "unix", "format": "yyyy-MM-dd"},
        )
    ),
    "header-from": chain(
        (
            "h",
            f"{T}HeaderFrom$Value",
            {"fields": "id,price,address", "headers": "i,p,a", "operation": "move"},
        )
    ),
}


@pytest.mark.parametrize("case", sorted(SCHEMALESS_CASES))
def test_schemaless_records(oracle: ConnectOracle, spark: SparkSession, case: str) -> None:
    compare(oracle, spark, SCHEMALESS_CASES[case], schemaless(), value_type=SCHEMALESS_TYPE)
