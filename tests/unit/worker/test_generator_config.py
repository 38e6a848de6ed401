"""Connector config validation and plugin resolution: pure logic, no Spark session."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from tests.support.plugins import plugins_for
from worker.admission.registry import (
    ENTRY_POINT_GROUP,
    PluginRegistry,
    UnknownPluginError,
    qualified_name,
    validate_connector_config,
)
from worker.connectors import BUILTIN_CONNECTORS, generator
from worker.connectors.generator import GeneratorConnector, GeneratorSettings
from worker.plugins.api import Connector, ConnectorConfigError, Task, parse_config, task_output_path
from worker.plugins.checkpoint_layout import checkpoint_dir_for


class EchoSettings(BaseModel):
    topic: str = Field(alias="echo.topic")


class EchoConnector(Connector):
    """A plugin these tests register explicitly or through an entry point."""

    name = "echo"
    connector_type = "sink"
    config_model = EchoSettings

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return [dict(config)]

    def create_task(self) -> Task:
        raise NotImplementedError("never started in unit tests")


class Vendor:
    """Another plugin whose simple class name is the built-in generator's."""

    class GeneratorConnector(generator.GeneratorConnector):
        name = "vendor-generator"


HERE = __name__


def generator_config(**overrides: str) -> dict[str, str]:
    return {"connector.class": "generator", "output.path": "/data/out", **overrides}


def problem_keys(error: ConnectorConfigError) -> list[str]:
    return [p.key for p in error.problems]


def test_generator_defaults_apply_when_only_the_output_path_is_given() -> None:
    settings = parse_config(GeneratorSettings, {"output.path": "/data/out"})

    assert (settings.rows_per_second, settings.output_format) == (10, "parquet")
    assert task_output_path(settings.output_path, 3) == "/data/out/task-3"


def test_generator_parses_string_values_and_keeps_uris_intact() -> None:
    settings = parse_config(
        GeneratorSettings,
        {"output.path": "s3a://bucket/gen/", "rows.per.second": "250", "output.format": "json"},
    )

    assert (settings.rows_per_second, settings.output_format) == (250, "json")
    assert task_output_path(settings.output_path, 0) == "s3a://bucket/gen/task-0"


@pytest.mark.parametrize(
    ("overrides", "key", "fragment"),
    [
        ({"rows.per.second": "0"}, "rows.per.second", "greater than 0"),
        ({"rows.per.second": "-5"}, "rows.per.second", "'-5'"),
        ({"rows.per.second": "ten"}, "rows.per.second", "valid integer"),
        ({"output.format": "avro"}, "output.format", "'parquet' or 'json'"),
        ({"output.path": "   "}, "output.path", "at least 1 character"),
    ],
)
def test_invalid_generator_setting_is_named_in_a_one_line_message(
    overrides: dict[str, str], key: str, fragment: str
) -> None:
    with pytest.raises(ConnectorConfigError) as caught:
        validate_connector_config(PluginRegistry(BUILTIN_CONNECTORS), generator_config(**overrides))

    assert problem_keys(caught.value) == [key]
    message = str(caught.value)
    assert key in message and fragment in message
    assert "\n" not in message


def test_missing_output_path_is_reported_as_missing() -> None:
    with pytest.raises(ConnectorConfigError, match=r"output\.path: missing required value"):
        validate_connector_config(
            PluginRegistry(BUILTIN_CONNECTORS), {"connector.class": "generator"}
        )


def test_every_problem_is_reported_at_once() -> None:
    config = {"output.path": "", "rows.per.second": "0", "output.format": "csv"}

    with pytest.raises(ConnectorConfigError) as caught:
        parse_config(GeneratorSettings, config)

    assert sorted(problem_keys(caught.value)) == ["output.format", "output.path", "rows.per.second"]


def test_framework_keys_and_unknown_keys_are_ignored_by_the_connector() -> None:
    config = generator_config(name="gen", **{"tasks.max": "3", "some.future.key": "x"})

    validated = validate_connector_config(PluginRegistry(BUILTIN_CONNECTORS), config)

    assert isinstance(validated.connector, GeneratorConnector)
    assert validated.tasks_max == 3
    assert validated.settings == parse_config(GeneratorSettings, {"output.path": "/data/out"})


def test_tasks_max_defaults_to_one() -> None:
    validated = validate_connector_config(PluginRegistry(BUILTIN_CONNECTORS), generator_config())

    assert validated.tasks_max == 1


@pytest.mark.parametrize("tasks_max", ["0", "-1", "two", "1.5", ""])
def test_tasks_max_must_be_a_positive_integer(tasks_max: str) -> None:
    with pytest.raises(ConnectorConfigError) as caught:
        validate_connector_config(
            PluginRegistry(BUILTIN_CONNECTORS), generator_config(**{"tasks.max": tasks_max})
        )

    assert problem_keys(caught.value) == ["tasks.max"]


@pytest.mark.parametrize("connector_class", [None, "", "  "])
def test_connector_class_is_required(connector_class: str | None) -> None:
    config = {"output.path": "/data/out"}
    if connector_class is not None:
        config["connector.class"] = connector_class

    with pytest.raises(ConnectorConfigError) as caught:
        validate_connector_config(PluginRegistry(BUILTIN_CONNECTORS), config)

    assert problem_keys(caught.value) == ["connector.class"]


@pytest.mark.parametrize("connector_class", [None, "", "  "])
def test_a_config_without_connector_class_is_refused_as_such_before_it_is_stored(
    connector_class: str | None, tmp_path: Path
) -> None:
    """What POST /connectors and PUT /connectors/{c}/config (so `ctl apply`) answer: the
    leader's admission looks the plugin up first, and said `Unknown connector plugin ''`."""
    config = {"name": "demo", "output.path": str(tmp_path / "out")}
    if connector_class is not None:
        config["connector.class"] = connector_class
    plugins = plugins_for(PluginRegistry(BUILTIN_CONNECTORS), tmp_path / "checkpoints")

    with pytest.raises(ValueError) as caught:
        plugins.admit(config, {})

    message = str(caught.value)
    assert message.startswith("connector.class is required")
    assert "generator (worker.connectors.generator.GeneratorConnector)" in message


def test_generator_makes_one_task_config_per_task() -> None:
    config = generator_config(**{"tasks.max": "3"})

    task_configs = GeneratorConnector().task_configs(config, 3)

    assert task_configs == [config, config, config]


@pytest.mark.parametrize(
    "connector_class",
    [
        "generator",
        " generator ",
        "GeneratorConnector",
        "worker.connectors.generator.GeneratorConnector",
    ],
)
def test_builtin_plugin_resolves_by_alias_simple_name_or_path(connector_class: str) -> None:
    assert PluginRegistry(BUILTIN_CONNECTORS).resolve(connector_class) is GeneratorConnector


@pytest.mark.parametrize(
    ("former_path", "alias"),
    [
        ("worker.connectors.kafka_to_files.KafkaToFilesConnector", "kafka-to-files"),
        ("worker.connectors.files_to_kafka.FilesToKafkaConnector", "files-to-kafka"),
        ("worker.connectors.kafka_to_delta.KafkaToDeltaConnector", "kafka-to-delta"),
        ("worker.connectors.kafka_to_iceberg.KafkaToIcebergConnector", "kafka-to-iceberg"),
        ("worker.connectors.kafka_to_jdbc.KafkaToJdbcConnector", "kafka-to-jdbc"),
        ("worker.connectors.jdbc_to_kafka.JdbcToKafkaConnector", "jdbc-to-kafka"),
    ],
)
def test_a_builtin_plugin_still_resolves_by_the_path_it_had_before_it_moved(
    former_path: str, alias: str
) -> None:
    """Configs stored on the config topic before the connectors moved into families."""
    registry = PluginRegistry(BUILTIN_CONNECTORS)

    assert registry.resolve(former_path) is registry.resolve(alias)
    assert qualified_name(registry.resolve(alias)) != former_path


def test_a_registered_plugin_resolves_by_its_qualified_name() -> None:
    registry = PluginRegistry([*BUILTIN_CONNECTORS, EchoConnector])

    assert registry.resolve(f"{HERE}.EchoConnector") is EchoConnector


@pytest.mark.parametrize(
    ("connector_class", "reason"),
    [
        ("nosuch", "no installed plugin has this alias"),
        ("no.such.module.Thing", "no installed plugin has this alias"),
        (f"{HERE}.EchoConnector", "no installed plugin has this alias"),
        ("pathlib.Path", "no installed plugin has this alias"),
        ("worker.plugins.api.Connector", "no installed plugin has this alias"),
    ],
)
def test_unknown_plugin_error_says_why_and_lists_available_plugins(
    connector_class: str, reason: str
) -> None:
    registry = PluginRegistry(BUILTIN_CONNECTORS)

    with pytest.raises(UnknownPluginError) as caught:
        validate_connector_config(
            registry, generator_config(**{"connector.class": connector_class})
        )

    message = str(caught.value)
    assert reason in message
    assert "generator (worker.connectors.generator.GeneratorConnector)" in message


def test_a_simple_name_shared_by_two_plugins_is_ambiguous() -> None:
    registry = PluginRegistry([GeneratorConnector, Vendor.GeneratorConnector])

    with pytest.raises(UnknownPluginError, match="ambiguous"):
        registry.resolve("GeneratorConnector")
    assert registry.resolve("vendor-generator") is Vendor.GeneratorConnector
    assert registry.resolve(f"{HERE}.Vendor.GeneratorConnector") is Vendor.GeneratorConnector


def test_entry_point_plugins_are_registered_and_broken_ones_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    installed = [
        EntryPoint("echo", f"{HERE}:EchoConnector", ENTRY_POINT_GROUP),
        EntryPoint("broken", "no.such.module:Thing", ENTRY_POINT_GROUP),
        EntryPoint("not-a-connector", "pathlib:Path", ENTRY_POINT_GROUP),
    ]

    with caplog.at_level(logging.WARNING, logger="worker.admission.registry"):
        registry = PluginRegistry(BUILTIN_CONNECTORS, installed)

    assert registry.list_plugins() == [EchoConnector, *BUILTIN_CONNECTORS]
    assert registry.resolve("echo") is EchoConnector
    skipped = [r.getMessage() for r in caplog.records]
    assert any("broken" in m for m in skipped) and any("not-a-connector" in m for m in skipped)


def test_two_plugins_may_not_claim_one_alias() -> None:
    class Impostor(GeneratorConnector):
        pass

    registry = PluginRegistry(BUILTIN_CONNECTORS)

    with pytest.raises(ValueError, match="claimed by both"):
        registry.register(Impostor)


def test_validation_runs_the_plugins_own_schema() -> None:
    registry = PluginRegistry([GeneratorConnector, EchoConnector])

    with pytest.raises(ConnectorConfigError, match=r"echo\.topic: missing required value"):
        validate_connector_config(registry, {"connector.class": "echo"})


def test_checkpoint_dir_is_per_connector_and_task() -> None:
    assert checkpoint_dir_for(Path("/ck"), "orders", 2) == Path("/ck/orders/task-2")


def test_batch_interval_scales_the_rows_of_each_batch() -> None:
    settings = GeneratorConnector().validate(
        {"output.path": "/tmp/out", "rows.per.second": "5", "batch.interval.ms": "3000"}
    )
    assert isinstance(settings, GeneratorSettings)
    assert settings.rows_per_batch == 15
    slow = GeneratorConnector().validate(
        {"output.path": "/tmp/out", "rows.per.second": "1", "batch.interval.ms": "100"}
    )
    assert isinstance(slow, GeneratorSettings)
    assert slow.rows_per_batch == 1
