"""Converters from configs without Spark: class names and aliases, Connect's precedence
of connector over worker over built-in defaults, and every bad setting named by key."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

import pytest

from worker.config import WorkerConfig
from worker.config.errors import ConfigError
from worker.plugins.api import ConnectorConfigError
from worker.records.converters.avro_schema import failure_sign
from worker.records.converters.payload_types import NoSampleError, inferred_type
from worker.records.converters.spec import (
    CLASS_NAMES,
    ConverterSpec,
    Direction,
    converter_spec,
    inherit_converters,
    record_converters,
    resolve_kind,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

AVRO = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "note", "type": ["null", "string"]},
        ],
    }
)
BYTES = {"key.converter": "bytes", "value.converter": "bytes"}


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("org.apache.kafka.connect.converters.ByteArrayConverter", "bytes"),
        ("ByteArrayConverter", "bytes"),
        ("org.apache.kafka.connect.storage.StringConverter", "string"),
        ("STRING", "string"),
        ("org.apache.kafka.connect.json.JsonConverter", "json"),
        (" json ", "json"),
        ("io.confluent.connect.avro.AvroConverter", "avro"),
        ("AvroConverter", "avro"),
        ("org.apache.kafka.connect.converters.ShortConverter", "short"),
        ("IntegerConverter", "integer"),
        ("long", "long"),
        ("org.apache.kafka.connect.converters.FloatConverter", "float"),
        ("DoubleConverter", "double"),
        ("Boolean", "boolean"),
        ("org.apache.kafka.connect.converters.IntConverter", None),
        ("org.apache.kafka.connect.json.JsonConverterX", None),
        ("com.example.ProtobufConverter", None),
    ],
)
def test_class_names_simple_names_and_aliases(name: str, kind: str | None) -> None:
    assert resolve_kind(name) == kind


def test_every_kind_has_a_class_name_a_connect_user_knows() -> None:
    assert set(CLASS_NAMES) == {
        "bytes",
        "string",
        "json",
        "avro",
        "short",
        "integer",
        "long",
        "float",
        "double",
        "boolean",
    }


def test_json_writes_connects_default_decimal_format_unless_told_in_any_case() -> None:
    assert record_converters({"value.converter": "json"}, BYTES, "write").value.decimal_format == (
        "BASE64"
    )
    numeric = {"value.converter": "json", "value.converter.decimal.format": "numeric"}
    assert record_converters(numeric, BYTES, "write").value.decimal_format == "NUMERIC"


def test_built_in_defaults_and_connects_json_default_of_schemas_enabled() -> None:
    defaults = {"value.converter": "json", "value.converter.schemas.enable": "false"}
    converters = record_converters({}, {**defaults, "key.converter": "string"}, "write")
    assert converters.key == ConverterSpec("key", "string")
    assert converters.value == ConverterSpec("value", "json", schemas_enable=False)
    named = record_converters({"value.converter": "json"}, defaults, "write")
    assert named.value.schemas_enable, "a connector naming json gets Connect's default"


def test_a_connector_naming_a_converter_takes_none_of_the_defaults_settings_for_it() -> None:
    worker = {
        "value.converter": "avro",
        "value.converter.avro.schema": AVRO,
        "value.converter.avro.wire.format": "plain",
        "key.converter": "string",
    }
    connector = {"value.converter": "json", "value.converter.schemas.enable": "false"}
    assert inherit_converters(worker, connector) == {"key.converter": "string"}
    tweaked = {"value.converter.avro.wire.format": "confluent"}
    assert inherit_converters(worker, tweaked) == {
        "value.converter": "avro",
        "value.converter.avro.schema": AVRO,
        "key.converter": "string",
    }, "a setting of the connector's own wins over the inherited converter's"


def problem_keys(config: dict[str, str], direction: Direction = "read") -> list[str]:
    with pytest.raises(ConnectorConfigError) as error:
        record_converters(config, BYTES, direction)
    return [p.key for p in error.value.problems]


@pytest.mark.parametrize(
    ("config", "keys"),
    [
        ({"value.converter": "org.example.Nope"}, ["value.converter"]),
        (
            {"key.converter": "string", "key.converter.schemas.enable": "true"},
            ["key.converter.schemas.enable"],
        ),
        ({"value.converter.schemas.enable": "yes please"}, ["value.converter.schemas.enable"]),
        (
            {"value.converter": "json", "value.converter.schema.enable": "false"},
            ["value.converter.schema.enable"],
        ),
        ({"value.converter": "avro"}, ["value.converter.avro.schema"]),
        (
            {"value.converter": "avro", "value.converter.avro.schema": '{"name": "x"}'},
            ["value.converter.avro.schema"],
        ),
        (
            {"value.converter": "avro", "value.converter.avro.schema": "{not json"},
            ["value.converter.avro.schema"],
        ),
        (
            {
                "value.converter": "avro",
                "value.converter.avro.schema": AVRO,
                "value.converter.avro.wire.format": "auto",
            },
            ["value.converter.avro.wire.format"],
        ),
        (
            {
                "value.converter": "avro",
                "value.converter.avro.schema": AVRO,
                "value.converter.schema.registry.url": "http://registry:8081",
            },
            ["value.converter.schema.registry.url"],
        ),
        (
            {
                "value.converter": "avro",
                "value.converter.avro.schema": AVRO,
                "value.converter.avro.wire.format": "plain",
                "value.converter.avro.schema.id": "3",
            },
            ["value.converter.avro.schema.id"],
        ),
        (
            {"value.converter": "json", "value.converter.decimal.format": "STRING"},
            ["value.converter.decimal.format"],
        ),
        (
            {"value.converter": "string", "value.converter.decimal.format": "NUMERIC"},
            ["value.converter.decimal.format"],
        ),
        (
            {"key.converter": "LongConverter", "key.converter.schemas.enable": "true"},
            ["key.converter.schemas.enable"],
        ),
        ({"value.converter": "long", "value.schema": "BIGINT"}, ["value.schema"]),
        ({"value.schema": "id LONG"}, ["value.schema"]),
        ({"key.converter": "json", "key.schema": " "}, ["key.schema"]),
        (
            {"key.converter": "nope", "value.converter": "avro"},
            ["key.converter", "value.converter.avro.schema"],
        ),
    ],
)
def test_bad_settings_are_named_by_key(config: dict[str, str], keys: list[str]) -> None:
    assert problem_keys(config) == keys


def test_writing_confluents_wire_format_needs_the_schemas_registry_id() -> None:
    config = {"value.converter": "avro", "value.converter.avro.schema": AVRO}
    assert record_converters(config, BYTES, "read").value.confluent_prefix is None
    assert problem_keys(config, "write") == ["value.converter.avro.schema.id"]
    with_id = {**config, "value.converter.avro.schema.id": "258"}
    written = record_converters(with_id, BYTES, "write").value
    assert written.confluent_prefix == b"\x00\x00\x00\x01\x02"


def test_a_ddl_schema_is_for_reading_json_only() -> None:
    config = {"value.converter": "json", "value.schema": "id LONG"}
    assert record_converters(config, BYTES, "read").value.schema_ddl == "id LONG"
    assert problem_keys(config, "write") == ["value.schema"]


def test_schemas_enable_false_is_harmless_on_string_and_bytes() -> None:
    config = {"key.converter": "string", "key.converter.schemas.enable": "false"}
    assert record_converters(config, BYTES, "read").key == ConverterSpec("key", "string")


def test_worker_converters_are_settings_checked_when_the_worker_config_loads() -> None:
    base = {"rest.advertised.host.name": "127.0.0.1"}
    config = WorkerConfig(
        **base,
        **{
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "internal.value.converter": "org.apache.kafka.connect.json.JsonConverter",
        },
    )
    assert config.converter_settings == {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    assert config.ignored_keys == ["internal.value.converter"]
    with pytest.raises(ConfigError, match=r"key\.converter.*unknown converter"):
        WorkerConfig(**base, **{"key.converter": "com.example.Nope"})
    with pytest.raises(ConfigError, match=r"value\.converter\.avro\.schema"):
        WorkerConfig(**base, **{"value.converter": "avro"})


@pytest.mark.parametrize(
    ("schema", "whole_null", "required"),
    [
        (AVRO, False, ("id",)),
        ('"long"', True, ()),
        ('["null", "long"]', False, ()),
        (
            json.dumps(
                {"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "int"]}]}
            ),
            False,
            (),
        ),
    ],
)
def test_what_shows_that_avro_could_not_read_a_payload(
    schema: str, whole_null: bool, required: tuple[str, ...]
) -> None:
    sign = failure_sign(schema)
    assert (sign.whole_null, sign.required_fields) == (whole_null, required)


def test_a_record_of_optional_fields_alone_shows_no_failure_and_is_read_failfast() -> None:
    optional = {"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "int"]}]}
    assert not failure_sign(json.dumps(optional)).detectable
    assert not failure_sign('["null", "long"]').detectable
    assert failure_sign(AVRO).detectable and failure_sign('"long"').detectable


def test_connectors_list_the_converter_classes_among_their_settings_as_connect_does() -> None:
    """So `GET /connector-plugins/<plugin>/config` shows them, and a validate answer
    files a problem with a converter class under its key."""
    from rest.connector_plugins_routes import config_definitions
    from worker.connectors.files.files_to_kafka import FilesToKafkaConnector
    from worker.connectors.files.kafka_to_files import KafkaToFilesConnector

    reads = config_definitions(KafkaToFilesConnector)
    writes = config_definitions(FilesToKafkaConnector)
    assert {"key.converter", "value.converter", "key.schema", "value.schema"} <= set(reads)
    assert {"key.converter", "value.converter"} <= set(writes)
    assert "value.schema" not in writes, "a source writes its rows' own schema"
    assert reads["value.converter"].default_value is None


@pytest.mark.parametrize(
    ("settings", "wanted"),
    [
        ({}, "value.converter: no record with an envelope schema to infer"),
        ({"value.converter.schemas.enable": "false"}, "value.converter: no JSON record to infer"),
    ],
)
def test_a_json_value_without_samples_says_what_it_looked_for(
    settings: dict[str, str], wanted: str
) -> None:
    spec = converter_spec({"value.converter": "json", **settings}, "value", "read")
    with pytest.raises(NoSampleError) as caught:
        inferred_type(spec, cast("SparkSession", None), [b"", b"null"])
    assert str(caught.value).startswith(wanted)
