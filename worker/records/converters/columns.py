"""Converters as Spark column expressions: one side's bytes decoded into a typed column,
and a typed column encoded into what a converter writes.

Decoding never throws for a bad record where Spark can tell one: it answers the value
and a boolean `failed` (the input was there, the value could not be made from it), so
the caller decides what a failed record does (fail the task today; a dead letter queue
later). JSON is parsed PERMISSIVE with a corrupt-record field, Avro PERMISSIVE with the
schema's non-null fields as the sign (`avro_schema`); an Avro schema that can show no
sign is decoded FAILFAST, so a bad payload fails the query rather than passing as nulls.

Spark evaluates `from_json` without generated code, so nothing shares one parse among the
expressions that read it: the value and its failure sign read the parse as a column
(`Decoded.parsed`), which the caller computes once, in a projection below them. Inlined,
a record of three fields was parsed five times (a million records: 9 s, not 3.5 s).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from worker.records.converters.avro_schema import failure_sign
from worker.records.converters.connect_schema import UnmappableTypeError
from worker.records.converters.fixed_width import ENCODINGS, decode_fixed, encode_fixed
from worker.records.converters.json_reading import from_wire, wire_type
from worker.records.converters.json_writing import json_value
from worker.records.converters.spec import ConverterSpec

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

CORRUPT_FIELD: Final = "__sparkherd_corrupt_record"
"""Where PERMISSIVE `from_json` puts a record it could not parse (a name no payload has)."""
MAX_LENGTH: Final = 2**31 - 1
CONFLUENT_HEADER_BYTES: Final = 5


class ConverterMismatchError(ValueError):
    """A converter cannot encode or decode a payload of this type; `key` names the
    setting to change."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}")


class SparkAvroMissingError(ConverterMismatchError):
    """Not the config's fault, but named by the key that asked for Avro."""

    def __init__(self, key: str) -> None:
        super().__init__(
            key,
            "the avro converter needs Spark's Avro support (spark-avro) on the worker's "
            "classpath: set avro.jvm.connector=maven (the default; it needs `mvn` and "
            "Maven Central) or add org.apache.spark:spark-avro_2.13:<spark version> to "
            "spark.jars",
        )


@dataclass(frozen=True)
class Decoded:
    value: Column
    failed: Column
    """True where the input was not null and could not be converted."""
    parsed: Column | None = None
    """The parse `value` and `failed` read as a column of its name, which `with_parses`
    adds to the frame they are selected from (None: they read only the raw column)."""


def with_parses(frame: DataFrame, *decoded: Decoded) -> DataFrame:
    """`frame` with the parses that `decoded` read, each computed once, below them."""
    parses = [d.parsed for d in decoded if d.parsed is not None]
    return frame.select("*", *parses) if parses else frame


def decode(spec: ConverterSpec, raw: Column, payload_type: DataType | None) -> Decoded:
    """`raw` (binary) through `spec`; `payload_type` is the json payload's type (and
    ignored by the other converters)."""
    from pyspark.sql import functions as f

    if spec.kind == "bytes":
        return Decoded(raw, f.lit(False))
    if spec.kind == "string":
        return Decoded(raw.cast("string"), f.lit(False))
    if spec.kind == "avro":
        return _decode_avro(spec, raw)
    if spec.kind != "json":
        return Decoded(*decode_fixed(spec.kind, raw))
    if payload_type is None:
        raise ValueError(f"{spec.key}: the json payload's type is not known yet")
    return _decode_json(spec, raw, payload_type)


def _decode_json(spec: ConverterSpec, raw: Column, payload_type: DataType) -> Decoded:
    from pyspark.sql import functions as f

    text = raw.cast("string")
    absent = raw.isNull() | (f.trim(text) == "null")
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_FIELD}
    name = f"__sparkherd_parsed_{spec.side}"
    parsed = f.col(name)
    wire = wire_type(payload_type)
    if spec.schemas_enable:
        parse = f.from_json(text, _with_corrupt_field([StructField("payload", wire)]), options)
        payload = parsed["payload"]
        keys = f.json_object_keys(text)
        broken = parsed[CORRUPT_FIELD].isNotNull() | f.coalesce(
            ~f.array_contains(keys, "payload"), f.lit(True)
        )
    elif isinstance(wire, StructType):
        parse = f.from_json(text, _with_corrupt_field(wire.fields), options)
        payload = parsed.dropFields(CORRUPT_FIELD)
        broken = parsed[CORRUPT_FIELD].isNotNull()
    else:
        # A bare value (`42`, `"a"`, `[1]`) is read as the one element of a JSON array:
        # from_json takes no primitive at the top, and a second element is a failure.
        listed = f.concat(f.lit("["), text, f.lit("]"))
        parse = f.from_json(listed, ArrayType(wire), options)
        payload = f.try_element_at(parsed, f.lit(1))
        broken = f.coalesce((f.size(parsed) != 1) | payload.isNull(), f.lit(True))
    value = from_wire(payload, payload_type)
    if value.bad is not None:
        broken = broken | f.coalesce(value.bad, f.lit(False))
    return Decoded(f.when(~absent, value.value), ~absent & broken, parse.alias(name))


def _with_corrupt_field(fields: list[StructField]) -> StructType:
    return StructType([*fields, StructField(CORRUPT_FIELD, StringType())])


def _decode_avro(spec: ConverterSpec, raw: Column) -> Decoded:
    from pyspark.sql import functions as f

    assert spec.avro_schema is not None
    framed_ok = f.lit(True)
    payload = raw
    if spec.wire_format == "confluent":
        framed_ok = (f.length(raw) >= CONFLUENT_HEADER_BYTES) & (
            f.substring(raw, 1, 1) == f.lit(bytearray(b"\x00"))
        )
        if spec.schema_id is not None:
            wanted = bytearray(spec.schema_id.to_bytes(4, "big"))
            framed_ok = framed_ok & (f.substring(raw, 2, 4) == f.lit(wanted))
        payload = f.when(framed_ok, f.substring(raw, CONFLUENT_HEADER_BYTES + 1, MAX_LENGTH))
    sign = failure_sign(spec.avro_schema)
    mode = "PERMISSIVE" if sign.detectable else "FAILFAST"
    value = _avro_call(spec, "from_avro", payload, spec.avro_schema, {"mode": mode})
    unread = f.lit(False)
    if sign.whole_null:
        unread = unread | value.isNull()
    for name in sign.required_fields:
        unread = unread | value[name].isNull()
    return Decoded(value, raw.isNotNull() & (~f.coalesce(framed_ok, f.lit(False)) | unread))


def _avro_call(spec: ConverterSpec, name: str, *args: object) -> Column:
    """`pyspark.sql.avro.functions.<name>`, which needs spark-avro on the JVM's classpath."""
    from pyspark.sql.avro import functions as avro

    function: Callable[..., Column] = getattr(avro, name)
    try:
        return function(*args)
    except TypeError as exc:  # py4j: 'JavaPackage' object is not callable
        if "JavaPackage" not in str(exc):
            raise
        raise SparkAvroMissingError(spec.key) from None


def encode(spec: ConverterSpec, payload: Column, data_type: DataType) -> Column:
    """`payload` (of `data_type`) as the string or binary `spec` writes; null stays null."""
    from pyspark.sql import functions as f

    if spec.kind == "bytes":
        if not isinstance(data_type, BinaryType):
            raise ConverterMismatchError(
                spec.key,
                f"the bytes converter writes binary, not {data_type.simpleString()} "
                "(cast it to BINARY, or choose another converter)",
            )
        return payload
    if spec.kind == "string":
        if isinstance(data_type, StructType | ArrayType | MapType):
            raise ConverterMismatchError(
                spec.key,
                f"the string converter writes one plain value, not a "
                f"{data_type.simpleString()} (choose json or avro)",
            )
        return payload.cast("string")
    if spec.kind == "avro":
        assert spec.avro_schema is not None
        encoded = _avro_call(spec, "to_avro", payload, spec.avro_schema)
        prefix = spec.confluent_prefix
        return encoded if prefix is None else f.concat(f.lit(bytearray(prefix)), encoded)
    if spec.kind != "json":
        wanted = ENCODINGS[spec.kind].data_type
        if data_type != wanted:
            raise ConverterMismatchError(
                spec.key,
                f"the {spec.kind} converter writes {wanted.simpleString()}, not "
                f"{data_type.simpleString()} (cast it to {wanted.simpleString().upper()}, or "
                "choose another converter)",
            )
        return encode_fixed(spec.kind, payload)
    try:
        return json_value(payload, data_type, spec.schemas_enable, spec.decimal_format)
    except UnmappableTypeError as exc:
        raise ConverterMismatchError(spec.key, str(exc)) from None


def top_level(name: str) -> Column:
    """The column named `name`, as it is: a dot in a name (a database column may have
    one) is no path into a struct, a backtick no quote."""
    from pyspark.sql import functions as f

    return f.col("`" + name.replace("`", "``") + "`")


def row_payload(spec: ConverterSpec, schema: StructType) -> tuple[Column, DataType]:
    """What a source connector encodes as a record's value: the whole row (json, avro),
    or its one column (string, bytes: a row of several columns has no such value)."""
    from pyspark.sql import functions as f

    if spec.kind in ("json", "avro"):
        return f.struct(*(top_level(name) for name in schema.fieldNames())), schema
    if len(schema.fields) != 1:
        raise ConverterMismatchError(
            spec.key,
            f"the {spec.kind} converter writes one column, and the rows have "
            f"{len(schema.fields)} ({', '.join(schema.fieldNames())}): choose json or avro, "
            "or give the input one column",
        )
    [field] = schema.fields
    return top_level(field.name), field.dataType
