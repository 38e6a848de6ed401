"""sparkherd's converters against Kafka Connect's own (`tests.support.connect_oracle`), in
a real local Spark, on the corpus of `tests.support.converter_corpus`, both ways:

- what Connect's converter writes, sparkherd decodes to the very values Connect was
  given (a float by its bits);
- what sparkherd encodes from those values, Connect's `toConnectData` reads to what it
  reads from its own bytes, the schema Connect reads from sparkherd's envelope is the
  one it reads from its own but for what sparkherd does not keep (as
  docs/connectors/converters.md lists), and the bytes are Connect's own wherever
  Connect's are of one order (no map of several entries) and the schema is kept whole.

For the JsonConverter with `schemas.enable` true and false, both `decimal.format`s (a
record written with one is read with a converter set to the other: reading takes both),
keys and values; for every converter of one value (`ShortConverter`..`BooleanConverter`,
`StringConverter`, `ByteArrayConverter`). Bytes Connect refuses to read, sparkherd marks
as records it cannot convert, and a field Connect reads as its default, sparkherd does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import time
from typing import TYPE_CHECKING, Any, Final

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import functions as f
from pyspark.sql.types import DataType, StructField, StructType

from tests.support.connect_oracle import ConnectOracle
from tests.support.converter_corpus import (
    DATE,
    DECIMAL,
    FIXED_CASES,
    JSON_CASES,
    KEY_CASES,
    ROW,
    TIMESTAMP,
    Case,
    Spec,
    as_connect,
    as_spark,
    one_order,
    same,
)
from tests.support.in_process_spark import binary_rows, in_process_spark
from worker.records.converters.columns import decode, encode, with_parses
from worker.records.converters.connect_schema import ATTRIBUTES, spark_type
from worker.records.converters.payload_types import declared_type, inferred_type
from worker.records.converters.spec import ConverterSpec, Side, converter_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.parallel, pytest.mark.long]

JSON: Final = "org.apache.kafka.connect.json.JsonConverter"
TOPIC: Final = "orders"
OTHER_FORMAT: Final = {"BASE64": "NUMERIC", "NUMERIC": "BASE64"}


@pytest.fixture(scope="module")
def oracle() -> Iterator[ConnectOracle]:
    with ConnectOracle.start() as started:
        yield started


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    conf = {"spark.master": "local[2]", "spark.sql.session.timeZone": "UTC"}
    with in_process_spark("converters-differential", conf) as session:
        yield session


def _json_params() -> Iterator[Any]:
    for side, cases in (("value", JSON_CASES), ("key", KEY_CASES)):
        for case in cases:
            for schemas in (True, False):
                for decimals in ("BASE64", "NUMERIC") if case.has_decimals else ("BASE64",):
                    name = f"{side}-{case.name}-{'envelope' if schemas else 'plain'}-{decimals}"
                    yield pytest.param(case, schemas, decimals, side, id=name)


JSON_PARAMS: Final = list(_json_params())


def json_settings(schemas: bool, decimals: str) -> dict[str, str]:
    """Connect's JsonConverter settings (a sparkherd connector's, under its prefix)."""
    return {"schemas.enable": str(schemas).lower(), "decimal.format": decimals}


def json_spec(side: Side, schemas: bool, decimals: str) -> ConverterSpec:
    settings = json_settings(schemas, decimals)
    prefixed = {f"{side}.converter.{k}": v for k, v in settings.items()}
    return converter_spec({f"{side}.converter": JSON, **prefixed}, side, None)


def decoded(
    spark: SparkSession, spec: ConverterSpec, data_type: DataType, data: Sequence[bytes | None]
) -> list[tuple[Any, bool]]:
    """Each record's value as sparkherd decodes it, and whether it could not."""
    frame = binary_rows(spark, data)
    result = decode(spec, f.col("raw"), data_type)
    rows = (
        with_parses(frame, result)
        .select(result.value.alias("v"), result.failed.alias("failed"))
        .collect()
    )
    return [(row.v, row.failed) for row in rows]


def encoded(
    spark: SparkSession, spec: ConverterSpec, schema: Spec, values: Sequence[object]
) -> list[bytes | None]:
    """Each value as sparkherd encodes it, from a column of the Spark type of `schema`."""
    data_type = spark_type(schema)
    nullable = any(value is None for value in values)
    frame = spark.createDataFrame(
        [(as_spark(schema, value),) for value in values],
        StructType([StructField("v", data_type, nullable)]),
    )
    rows = frame.select(encode(spec, f.col("v"), data_type).alias("raw")).collect()
    return [None if r.raw is None else _as_bytes(r.raw) for r in rows]


def _as_bytes(data: str | bytearray) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


def kept(spec: Spec, at: str = "top") -> dict[str, Any]:
    """The schema Connect reads from sparkherd's envelope of a value Connect reads as of
    `spec`, as the converters page says: a struct's fields keep their every attribute;
    elsewhere (`at` the top, an array's items, a map's keys or values) a schema keeps
    only what its Spark type says (a Date's, Timestamp's or Decimal's name, version,
    scale and precision, 38 when Connect gave none); the top is required, as are a
    map's keys."""
    out = dict(spec)
    kind = spec["type"]
    if kind == "array":
        out["items"] = kept(spec["items"], "items")
    elif kind == "map":
        out["keys"] = kept(spec["keys"], "keys")
        out["values"] = kept(spec["values"], "values")
    elif kind == "struct":
        out["fields"] = [
            {**kept(field, "field"), "field": field["field"]} for field in spec["fields"]
        ]
    if at != "field":
        for attribute in ATTRIBUTES:
            out.pop(attribute, None)
        name = spec.get("name")
        if name in (DATE, TIMESTAMP, DECIMAL):
            out.update(name=name, version=1)
        if name == DECIMAL:
            parameters = spec["parameters"]
            precision = parameters.get("connect.decimal.precision", "38")
            out["parameters"] = {
                "scale": parameters["scale"],
                "connect.decimal.precision": precision,
            }
    if at in ("top", "keys"):
        out["optional"] = False
    return out


def kept_value(spec: Spec, value: Any, at: str = "top") -> Any:
    """A value Connect read as of `spec`, as Connect reads it of `kept(spec)`: a `Time`
    where it is not a field's is its int, and a map of other than string keys (its JSON
    an array of pairs, in the order of Connect's hash map) without schemas is unordered."""
    if value is None:
        return None
    kind = spec["type"]
    if isinstance(value, time) and at != "field":
        return as_spark(spec, value)
    if kind == "array":
        return [kept_value(spec["items"], item, "items") for item in value]
    if kind == "map" and isinstance(value, list):  # read without a schema
        return {_frozen(k): kept_value(spec["values"], v, "values") for k, v in value}
    if kind == "map":
        return {k: kept_value(spec["values"], v, "values") for k, v in value.items()}
    if kind == "struct":
        return {f["field"]: kept_value(f, value.get(f["field"]), "field") for f in spec["fields"]}
    return value


def _frozen(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def connect_reads(oracle: ConnectOracle, converter: Any, data: bytes | None) -> tuple[Any, Any]:
    return oracle.read(converter, TOPIC, data)


@pytest.mark.parametrize(("case", "schemas", "decimals", "side"), JSON_PARAMS)
def test_what_connect_writes_sparkherd_reads(
    oracle: ConnectOracle,
    spark: SparkSession,
    case: Case,
    schemas: bool,
    decimals: str,
    side: Side,
) -> None:
    converter = oracle.converter(JSON, json_settings(schemas, decimals), key=side == "key")
    written = [oracle.write(converter, TOPIC, case.schema, value) for value in case.values]
    # Reading takes both decimal formats, whatever the converter's own setting.
    spec = json_spec(side, schemas, OTHER_FORMAT[decimals])
    if schemas:  # the type of a task's records comes from the first envelope's schema
        data_type = inferred_type(spec, spark, [w for w in written if w is not None])
    else:  # ... or from value.schema (key.schema)
        data_type = spark_type(case.schema)
    assert data_type == spark_type(case.schema)
    read = decoded(spark, spec, data_type, written)
    assert [failed for _, failed in read] == [False] * len(read)
    values = [as_connect(case.schema, value) for value, _ in read]
    mismatched = [(v, r) for v, r in zip(case.values, values, strict=True) if not same(v, r)]
    assert not mismatched


@pytest.mark.parametrize(("case", "schemas", "decimals", "side"), JSON_PARAMS)
def test_what_sparkherd_writes_connect_reads(
    oracle: ConnectOracle,
    spark: SparkSession,
    case: Case,
    schemas: bool,
    decimals: str,
    side: Side,
) -> None:
    converter = oracle.converter(JSON, json_settings(schemas, decimals), key=side == "key")
    ours = encoded(spark, json_spec(side, schemas, decimals), case.schema, case.values)
    for value, data in zip(case.values, ours, strict=True):
        theirs = oracle.write(converter, TOPIC, case.schema, value)
        if value is None:  # a null value is a null record (a tombstone)
            assert data is None
            continue
        assert data is not None
        our_schema, our_value = connect_reads(oracle, converter, data)
        assert theirs is not None
        their_schema, their_value = connect_reads(oracle, converter, theirs)
        expected = kept_value(case.schema, their_value)
        assert same(kept_value(case.schema, our_value), expected), (our_value, their_value)
        if not schemas:
            assert our_schema is None
            assert data == theirs or not one_order(case.schema, value)
            continue
        assert our_schema == kept(their_schema)
        if one_order(case.schema, value):
            assert _payload(data) == _payload(theirs)
            assert data == theirs or our_schema != their_schema


def _payload(envelope: bytes) -> bytes:
    """The payload's own bytes in `{"schema":...,"payload":...}`."""
    text = envelope.decode()
    head = '{"schema":'
    _, end = json.JSONDecoder().raw_decode(text, len(head))
    rest = text[end:]
    assert text.startswith(head) and rest.startswith(',"payload":') and rest.endswith("}")
    return rest[len(',"payload":') : -1].encode()


@pytest.mark.parametrize("side", ["value", "key"])
@pytest.mark.parametrize("class_name", list(FIXED_CASES))
def test_the_converters_of_one_value_both_ways(
    oracle: ConnectOracle, spark: SparkSession, class_name: str, side: Side
) -> None:
    case = FIXED_CASES[class_name]
    converter = oracle.converter(class_name, {}, key=side == "key")
    theirs = [oracle.write(converter, TOPIC, case.schema, value) for value in case.values]
    spec = converter_spec({f"{side}.converter": class_name}, side, None)
    data_type = declared_type(spec, spark)
    assert data_type == spark_type(case.schema)
    read = decoded(spark, spec, data_type, theirs)
    assert [failed for _, failed in read] == [False] * len(read)
    values = [as_connect(case.schema, value) for value, _ in read]
    assert all(map(same, values, case.values)), values

    ours = encoded(spark, spec, case.schema, case.values)
    assert ours == theirs
    for data, value in zip(ours, case.values, strict=True):
        assert same(connect_reads(oracle, converter, data)[1], value)


BAD_FIXED: Final[Mapping[str, Sequence[bytes]]] = {
    "org.apache.kafka.connect.converters.ShortConverter": [b"", b"\x00", b"\x00\x00\x00"],
    "org.apache.kafka.connect.converters.IntegerConverter": [b"\x00\x00\x00", b"\x00" * 8],
    "org.apache.kafka.connect.converters.LongConverter": [b"\x00" * 4, b"\x00" * 9],
    "org.apache.kafka.connect.converters.FloatConverter": [b"\x00" * 8],
    "org.apache.kafka.connect.converters.DoubleConverter": [b"\x00" * 4],
    "org.apache.kafka.connect.converters.BooleanConverter": [b"\x02", b"\xff", b"", b"\x00\x01"],
}


@pytest.mark.parametrize("class_name", list(BAD_FIXED))
def test_bytes_connect_cannot_read_one_value_from_are_marked(
    oracle: ConnectOracle, spark: SparkSession, class_name: str
) -> None:
    converter = oracle.converter(class_name, {})
    for data in BAD_FIXED[class_name]:
        with pytest.raises(Py4JJavaError, match="DataException"):
            connect_reads(oracle, converter, data)
    spec = converter_spec({"value.converter": class_name}, "value", None)
    read = decoded(spark, spec, declared_type(spec, spark), BAD_FIXED[class_name])
    assert [failed for _, failed in read] == [True] * len(read)


def _envelope(schema: Spec, payload: str) -> bytes:
    return f'{{"schema":{json.dumps(schema)},"payload":{payload}}}'.encode()


BAD_JSON: Final = [
    # A required field without a default, null or absent.
    pytest.param(ROW, '{"id": null, "rate": 1, "addresses": []}', id="required-null"),
    pytest.param(ROW, '{"rate": 1, "addresses": []}', id="required-absent"),
    pytest.param(ROW, '{"id": 1, "rate": 1, "addresses": [null]}', id="required-item-null"),
    # A decimal whose bytes are no base64, or no bytes at all.
    pytest.param(ROW, '{"id": 1, "rate": "!!", "addresses": []}', id="decimal-not-base64"),
    pytest.param(ROW, '{"id": 1, "rate": "", "addresses": []}', id="decimal-no-bytes"),
    pytest.param(ROW, '{"id": 1, "rate": true, "addresses": []}', id="decimal-boolean"),
    # A map of int keys that is no array of pairs.
    pytest.param(
        {"type": "map", "keys": {"type": "int32"}, "values": {"type": "string"}},
        '[[1, "a", "b"]]',
        id="pair-of-three",
    ),
    pytest.param(
        {"type": "map", "keys": {"type": "int32"}, "values": {"type": "string"}},
        '{"1": "a"}',
        id="pairs-as-object",
    ),
    pytest.param(
        {"type": "map", "keys": {"type": "int32"}, "values": {"type": "string"}},
        '[[null, "a"]]',
        id="pair-null-key",
    ),
]


@pytest.mark.parametrize(("schema", "payload"), BAD_JSON)
def test_envelopes_connect_cannot_read_are_marked(
    oracle: ConnectOracle, spark: SparkSession, schema: Spec, payload: str
) -> None:
    data = _envelope(schema, payload)
    with pytest.raises(Py4JJavaError):
        connect_reads(oracle, oracle.converter(JSON, {}), data)
    spec = json_spec("value", True, "BASE64")
    assert [failed for _, failed in decoded(spark, spec, spark_type(schema), [data])] == [True]


def test_an_absent_or_null_field_reads_as_its_default_as_in_connect(
    oracle: ConnectOracle, spark: SparkSession
) -> None:
    converter = oracle.converter(JSON, {})
    payloads = [
        '{"id": 1, "rate": "AQ==", "addresses": []}',
        '{"id": 1, "count": null, "rate": 0.01, "addresses": []}',
    ]
    data = [_envelope(ROW, payload) for payload in payloads]
    theirs = [connect_reads(oracle, converter, d)[1] for d in data]
    assert [value["count"] for value in theirs] == [7, 7]
    spec = json_spec("value", True, "BASE64")
    ours = decoded(spark, spec, spark_type(ROW), data)
    assert [failed for _, failed in ours] == [False, False]
    assert all(same(as_connect(ROW, v), t) for (v, _), t in zip(ours, theirs, strict=True))
