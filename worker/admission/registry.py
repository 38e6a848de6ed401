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
from functools import cache
from importlib.metadata import EntryPoint, entry_points, packages_distributions
from importlib.metadata import version as package_version
from typing import Final, NoReturn

from pydantic import BaseModel, ConfigDict, Field

from worker.plugins.api import (
    JAVA_INT_MAX,
    ConfigProblem,
    Connector,
    ConnectorConfigError,
    NonEmptyStr,
    parse_config,
)
from worker.plugins.auto_restart_settings import AutoRestartSettings
from worker.plugins.versions import version_problem

ENTRY_POINT_GROUP: Final = "sparkherd.connectors"
CONNECTOR_CLASS: Final = "connector.class"
VERSION: Final = ".plugin.version"
CONNECTOR_VERSION: Final = "connector.plugin.version"
CONVERTER_VERSIONS: Final = {
    "key.converter.plugin.version": "The key converter",
    "value.converter.plugin.version": "The value converter",
    "header.converter.plugin.version": "The header converter",
}
"""Connect 4.1's version keys of a connector's converters (KIP-891), by what they pin:
every converter here is built in, so each has sparkherd's version."""

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


@cache
def distribution_version(module: str) -> str | None:
    """The version of the installed distribution that ships `module`'s top-level
    package, as Connect reports the version of the jar a plugin came from; None when no
    installed distribution ships it."""
    owners = _owners().get(module.partition(".")[0], ())
    return package_version(owners[0]) if owners else None


@cache
def _owners() -> Mapping[str, list[str]]:
    """Which installed distributions ship each top-level package: read once, since it
    reads every distribution's metadata."""
    return packages_distributions()


def plugin_version(connector: type[Connector]) -> str | None:
    """The connector plugin's version: its own `version`, else its distribution's."""
    return connector.version or distribution_version(connector.__module__)


def builtin_version() -> str | None:
    """The version of what is built into the worker (converters, transforms): sparkherd's."""
    return distribution_version(__name__)


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

    def version_of(self, config: Mapping[str, str]) -> str | None:
        """The version of the plugin `config` names; None when this worker has none by
        that name (a status still shows, without a version)."""
        try:
            return plugin_version(self.resolve(config.get(CONNECTOR_CLASS, "")))
        except UnknownPluginError:
            return None

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


_VERSION_DOC: Final = (
    "Version of {what} (KIP-891): a version, a Maven version range such as [1.0,2.0), or "
    "latest; this worker has one version of each plugin, and a config it does not admit "
    "is refused"
)


class _ConnectorAndTasks(BaseModel):
    connector_class: NonEmptyStr = Field(alias=CONNECTOR_CLASS)
    connector_plugin_version: str | None = Field(
        default=None,
        alias=CONNECTOR_VERSION,
        description=_VERSION_DOC.format(what="the connector") + " (default: its version)",
    )
    tasks_max: int = Field(default=1, alias="tasks.max", ge=1, le=JAVA_INT_MAX)


class _ConverterVersions(BaseModel):
    key_converter_plugin_version: str | None = Field(
        default=None,
        alias="key.converter.plugin.version",
        description=_VERSION_DOC.format(what="the key converter"),
    )
    value_converter_plugin_version: str | None = Field(
        default=None,
        alias="value.converter.plugin.version",
        description=_VERSION_DOC.format(what="the value converter"),
    )
    header_converter_plugin_version: str | None = Field(
        default=None,
        alias="header.converter.plugin.version",
        description=_VERSION_DOC.format(what="the header converter"),
    )


class FrameworkSettings(AutoRestartSettings, _ConverterVersions, _ConnectorAndTasks):
    """The settings every connector has, which the framework rather than the plugin reads:
    `connector.class`, `connector.plugin.version`, `tasks.max`, the converters' version
    keys, then the `auto.restart.*` keys (pydantic lists the fields of the last base
    first)."""

    model_config = ConfigDict(frozen=True)

    def problems(self, tasks_max_limit: int, connector: type[Connector]) -> list[ConfigProblem]:
        """What the settings say together, against the worker's `tasks.max.limit`, and
        against the versions of `connector` and of the converters this worker has."""
        problems = self.version_problems(connector)
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

    def version_problems(self, connector: type[Connector]) -> list[ConfigProblem]:
        """A `*.plugin.version` that does not admit the version this worker has. Versions
        are looked up only for the keys given: a look-up reads every installed
        distribution's metadata once, which no config without them should pay for."""
        given = {k: v for k, v in self.model_dump(by_alias=True).items() if k.endswith(VERSION)}
        problems = []
        for key, spec in given.items():
            if spec is None:
                continue
            if key == CONNECTOR_VERSION:
                what, version = f"Plugin {qualified_name(connector)}", plugin_version(connector)
            else:
                what, version = CONVERTER_VERSIONS[key], builtin_version()
            if (problem := version_problem(spec, what, version)) is not None:
                problems.append(ConfigProblem(key, problem))
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
    plugin = registry.resolve(framework.connector_class)
    if problems := framework.version_problems(plugin):
        raise ConnectorConfigError(problems)
    connector = plugin()
    return ValidatedConnector(connector, framework.tasks_max, connector.validate(config))
