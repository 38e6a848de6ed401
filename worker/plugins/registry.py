"""Which connector plugins a worker knows, and how a `connector.class` value finds one.

Plugins come built in or from the Python entry-point group `sparkherd.connectors`, and are
looked up by alias, simple class name or fully qualified name, as Kafka Connect finds
them. Only registered plugins resolve: a `connector.class` arrives over REST, and
importing whatever module it names would let a caller run module-level code (or
`SystemExit`) inside the worker.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Final, NoReturn

from pydantic import BaseModel, ConfigDict, Field

from worker.plugins.api import JAVA_INT_MAX, ConfigProblem, Connector, NonEmptyStr, parse_config
from worker.plugins.auto_restart_settings import AutoRestartSettings

ENTRY_POINT_GROUP: Final = "sparkherd.connectors"
CONNECTOR_CLASS: Final = "connector.class"

log = logging.getLogger(__name__)


class UnknownPluginError(LookupError):
    """No connector plugin matches a `connector.class` value, or there is none: a config
    without one would otherwise be refused as naming the plugin `''`."""

    def __init__(self, requested: str, reason: str, available: Iterable[str]) -> None:
        self.requested = requested
        listing = ", ".join(available) or "none"
        problem = f"Unknown connector plugin {requested!r}: {reason}" if requested else reason
        super().__init__(f"{problem}. Available plugins: {listing}")


def qualified_name(connector: type[Connector]) -> str:
    return f"{connector.__module__}.{connector.__qualname__}"


def _is_plugin(candidate: object) -> bool:
    return (
        inspect.isclass(candidate)
        and issubclass(candidate, Connector)
        and not inspect.isabstract(candidate)
    )


class PluginRegistry:
    """The connector plugins this worker knows, looked up by alias, class name or path."""

    def __init__(
        self, connectors: Iterable[type[Connector]] = (), installed: Iterable[EntryPoint] = ()
    ) -> None:
        self._by_alias: dict[str, type[Connector]] = {}
        for connector in connectors:
            self.register(connector)
        for entry_point in installed:
            self._register_entry_point(entry_point)

    @classmethod
    def discover(cls, builtins: Iterable[type[Connector]]) -> PluginRegistry:
        """`builtins` plus every plugin installed under the `sparkherd.connectors` group."""
        return cls(builtins, entry_points(group=ENTRY_POINT_GROUP))

    def register(self, connector: type[Connector]) -> None:
        if not _is_plugin(connector):
            raise TypeError(f"{connector!r} is not a concrete Connector subclass")
        known = self._by_alias.get(connector.name)
        if known is not None and known is not connector:
            raise ValueError(
                f"Plugin alias {connector.name!r} is claimed by both {qualified_name(known)} "
                f"and {qualified_name(connector)}"
            )
        self._by_alias[connector.name] = connector

    def _register_entry_point(self, entry_point: EntryPoint) -> None:
        """A broken third-party plugin is logged and skipped: the worker must still start."""
        try:
            self.register(entry_point.load())
        except Exception:
            log.warning(
                "Skipping connector plugin entry point %s = %s",
                entry_point.name,
                entry_point.value,
                exc_info=True,
            )

    def list_plugins(self) -> list[type[Connector]]:
        return [self._by_alias[alias] for alias in sorted(self._by_alias)]

    def resolve(self, class_name: str) -> type[Connector]:
        requested = class_name.strip()
        if not requested:
            self._fail(
                requested,
                f"{CONNECTOR_CLASS} is required: the alias, class name or qualified name of "
                "a plugin",
            )
        if requested in self._by_alias:
            return self._by_alias[requested]
        matches = [
            c
            for c in self._by_alias.values()
            if requested in (c.__name__, c.__qualname__, qualified_name(c), *c.former_paths)
        ]
        if len(matches) == 1:
            return matches[0]
        if matches:
            names = ", ".join(qualified_name(c) for c in matches)
            self._fail(requested, f"ambiguous, it names {names}; use an alias or a full path")
        self._fail(
            requested,
            "no installed plugin has this alias, class name or qualified name (plugins are "
            f"built in or installed under the {ENTRY_POINT_GROUP!r} entry-point group)",
        )

    def _fail(self, requested: str, reason: str) -> NoReturn:
        available = (f"{c.name} ({qualified_name(c)})" for c in self.list_plugins())
        raise UnknownPluginError(requested, reason, available)


class _ConnectorAndTasks(BaseModel):
    connector_class: NonEmptyStr = Field(alias=CONNECTOR_CLASS)
    tasks_max: int = Field(default=1, alias="tasks.max", ge=1, le=JAVA_INT_MAX)


class FrameworkSettings(AutoRestartSettings, _ConnectorAndTasks):
    """The settings every connector has, which the framework rather than the plugin reads:
    `connector.class`, `tasks.max`, then the `auto.restart.*` keys (pydantic lists the
    fields of the last base first)."""

    model_config = ConfigDict(frozen=True)

    def problems(self, tasks_max_limit: int) -> list[ConfigProblem]:
        """What the settings say together, and against the worker's `tasks.max.limit`."""
        problems = []
        if self.tasks_max > tasks_max_limit:
            problems.append(
                ConfigProblem(
                    "tasks.max",
                    f"{self.tasks_max} is more than this cluster allows "
                    f"(tasks.max.limit={tasks_max_limit})",
                )
            )
        initial = self.auto_restart_initial_backoff_ms
        longest = self.auto_restart_max_backoff_ms
        if initial is not None and longest is not None and initial > longest:
            problems.append(
                ConfigProblem(
                    "auto.restart.initial.backoff.ms",
                    f"{initial} is more than auto.restart.max.backoff.ms ({longest})",
                )
            )
        return problems


@dataclass(frozen=True)
class ValidatedConnector:
    """A connector config that passed the framework's and the plugin's checks."""

    connector: Connector
    tasks_max: int
    settings: BaseModel


def validate_connector_config(
    registry: PluginRegistry, config: Mapping[str, str]
) -> ValidatedConnector:
    """Check a connector config end to end; raise ConnectorConfigError or UnknownPluginError."""
    framework = parse_config(FrameworkSettings, config)
    connector = registry.resolve(framework.connector_class)()
    return ValidatedConnector(connector, framework.tasks_max, connector.validate(config))
