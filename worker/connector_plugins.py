"""The herder's view of the connector plugins (see `herder.runtime.ConnectorPlugins`)."""

from __future__ import annotations

from collections.abc import Mapping

from worker.plugins import (
    CONNECTOR_CLASS,
    PluginRegistry,
    UnknownPluginError,
    ValidatedConnector,
    validate_connector_config,
)


class RegistryPlugins:
    """Connector-level operations answered from a `PluginRegistry`.

    An unknown `connector.class` is a user's error like any invalid key, so it surfaces
    as `ValueError` here, the one error type the herder turns into a 400.
    """

    def __init__(self, registry: PluginRegistry) -> None:
        self._registry = registry

    def validate(self, config: Mapping[str, str]) -> None:
        self._validated(config)

    def task_configs(self, config: Mapping[str, str]) -> list[dict[str, str]]:
        validated = self._validated(config)
        return validated.connector.task_configs(config, validated.tasks_max)[: validated.tasks_max]

    def connector_type(self, config: Mapping[str, str]) -> str:
        return self._validated(config).connector.connector_type

    def task_configs_refresh_s(self, config: Mapping[str, str]) -> float | None:
        """A class attribute: the plugin is looked up, the config not validated (the
        herder asks for every connector each time its loop wakes)."""
        try:
            connector = self._registry.resolve(config.get(CONNECTOR_CLASS, ""))
        except UnknownPluginError as exc:
            raise ValueError(str(exc)) from exc
        refresh_ms = connector.task_configs_refresh_ms
        return None if refresh_ms is None else refresh_ms / 1000

    def _validated(self, config: Mapping[str, str]) -> ValidatedConnector:
        try:
            return validate_connector_config(self._registry, config)
        except UnknownPluginError as exc:
            raise ValueError(str(exc)) from exc
