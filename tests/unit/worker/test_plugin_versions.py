"""A plugin's version (KIP-891): its own, else its distribution's; and a config pinning
a version this worker does not have fails where a task starts, not only at create."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import version

import pytest
from pydantic import BaseModel

from worker.admission.registry import (
    PluginRegistry,
    builtin_version,
    plugin_version,
    validate_connector_config,
)
from worker.connectors.generator import GeneratorConnector
from worker.plugins.api import Connector, ConnectorConfigError, Task


class NoSettings(BaseModel):
    pass


class VersionedSource(Connector):
    name = "versioned"
    version = "2.3.0-rc1"
    connector_type = "source"
    config_model = NoSettings

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return [dict(config)]

    def create_task(self) -> Task:
        raise NotImplementedError("never started here")


def test_a_built_in_plugin_has_sparkherd_s_version_and_a_plugin_may_give_its_own() -> None:
    assert plugin_version(GeneratorConnector) == version("sparkherd") == builtin_version()
    assert plugin_version(VersionedSource) == "2.3.0-rc1"


@pytest.mark.parametrize("requirement", ["2.3.0-rc1", "[2.3.0-beta,2.3.0)", "latest", "2.3-rc-1"])
def test_a_task_starts_with_a_version_its_plugin_has(requirement: str) -> None:
    config = {"connector.class": "versioned", "connector.plugin.version": requirement}

    validate_connector_config(PluginRegistry([VersionedSource]), config)


@pytest.mark.parametrize("requirement", ["2.3.0", "[2.4,)", "(,2.3.0-rc1)"])
def test_a_task_does_not_start_with_a_version_its_plugin_has_not(requirement: str) -> None:
    config = {"connector.class": "versioned", "connector.plugin.version": requirement}

    with pytest.raises(ConnectorConfigError) as refused:
        validate_connector_config(PluginRegistry([VersionedSource]), config)

    assert [p.key for p in refused.value.problems] == ["connector.plugin.version"]
    assert "has version 2.3.0-rc1 which does not match" in str(refused.value)


def test_a_status_version_is_that_of_the_plugin_a_config_names() -> None:
    registry = PluginRegistry([VersionedSource, GeneratorConnector])

    assert registry.version_of({"connector.class": "versioned"}) == "2.3.0-rc1"
    assert registry.version_of({"connector.class": "generator"}) == version("sparkherd")
    assert registry.version_of({"connector.class": "gone"}) is None
