"""The connector plugin API, and how a `connector.class` value finds its plugin.

A connector validates its config, splits its work into task configs, and makes tasks;
a task starts one Spark structured-streaming query. The framework owns everything
around that: the `tasks.max` setting, where checkpoints live, which scheduler pool a
query runs in, starting and stopping. Plugins come built in, from the Python entry-point
group `sparkherd.connectors`, and are looked up by alias, simple class name or fully
qualified name, as Kafka Connect finds them. Only registered plugins resolve: a
`connector.class` arrives over REST, and importing whatever module it names would let a
caller run module-level code (or `SystemExit`) inside the worker.
"""

from __future__ import annotations

import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Final, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from pydantic_core import ErrorDetails

from worker.names import check_name
from worker.task_claims import Claim

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

ENTRY_POINT_GROUP: Final = "sparkherd.connectors"
NonEmptyStr = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A string setting with its surrounding whitespace stripped; empty is refused."""
JAVA_INT_MAX: Final = 2**31 - 1
"""The bound of every integer setting, as Connect's INT type has: Spark takes these
values as Java ints or longs, and a larger one would reach it as an overflow."""
CONNECTOR_CLASS: Final = "connector.class"
TASK_DIR_PREFIX: Final = "task-"
WHOLE_CONFIG: Final = "<config>"
"""The key a problem is filed under when it concerns no single setting."""

log = logging.getLogger(__name__)

Settings = TypeVar("Settings", bound=BaseModel)


@dataclass(frozen=True)
class ConfigProblem:
    """What is wrong with one setting, kept per key so a validate endpoint can show it."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


class ConnectorConfigError(ValueError):
    """A connector config is invalid; the message is one line naming every offending key."""

    def __init__(self, problems: Iterable[ConfigProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "Invalid connector configuration: " + "; ".join(str(p) for p in self.problems)
        )


class UnknownPluginError(LookupError):
    """No connector plugin matches a `connector.class` value."""

    def __init__(self, requested: str, reason: str, available: Iterable[str]) -> None:
        self.requested = requested
        listing = ", ".join(available) or "none"
        super().__init__(
            f"Unknown connector plugin {requested!r}: {reason}. Available plugins: {listing}"
        )


def _problem(error: ErrorDetails) -> ConfigProblem:
    key = ".".join(str(part) for part in error["loc"]) or WHOLE_CONFIG
    if error["type"] == "missing":
        return ConfigProblem(key, "missing required value")
    return ConfigProblem(key, f"invalid value {error['input']!r}: {error['msg']}")


def parse_config(model: type[Settings], config: Mapping[str, str]) -> Settings:
    """Parse string settings into `model`, turning pydantic's errors into a user's error."""
    try:
        return model.model_validate(dict(config))
    except ValidationError as exc:
        raise ConnectorConfigError(_problem(e) for e in exc.errors()) from None


@dataclass(frozen=True)
class TaskContext:
    """Everything a task learns from the framework when it starts."""

    connector: str
    task: int
    connector_config: Mapping[str, str]
    task_config: Mapping[str, str]
    checkpoint_dir: Path
    claim: Claim | None = None
    """This start's ownership of the task; a sink that commits outside Spark's checkpoint
    checks `claim.fenced_by()` before it commits (the runtime stops a fenced query, but
    only at its next check)."""

    @property
    def query_name(self) -> str:
        """The name the task's query should carry: unique per worker, as Spark requires."""
        return f"{self.connector}-{self.task}"

    def connector_checkpoints(self) -> dict[int, Path]:
        """Every task of this connector that has a checkpoint (this one included, once it
        has), with its directory: what a task checks when its split must not change."""
        root = self.checkpoint_dir.parent.parent
        return {
            task: checkpoint_dir_for(root, self.connector, task)
            for task in checkpointed_tasks(root, self.connector)
        }


def checkpoint_dir_for(checkpoint_root: Path, connector: str, task: int) -> Path:
    """`<checkpoint_root>/<connector>/task-<i>`: the same on every worker sharing the root.

    A connector name is user input: one that breaks the name rule (`worker.names`) is
    refused rather than letting it point a checkpoint somewhere else.
    """
    return checkpoint_root / check_name(connector) / f"{TASK_DIR_PREFIX}{task}"


def task_output_path(output_path: str, task: int) -> str:
    """`<output_path>/task-<i>`: a file sink keeps its own commit log in its directory,
    so each task's query writes a directory of its own. A string, not a Path: the
    output may be a URI (s3a://, hdfs://) that Path would mangle."""
    return f"{output_path.rstrip('/')}/{TASK_DIR_PREFIX}{task}"


def checkpointed_tasks(checkpoint_root: Path, connector: str) -> list[int]:
    """The task numbers that have a checkpoint directory under `checkpoint_dir_for`."""
    root = checkpoint_dir_for(checkpoint_root, connector, 0).parent
    names = [path.name for path in root.iterdir()] if root.is_dir() else []
    return sorted(
        int(name.removeprefix(TASK_DIR_PREFIX))
        for name in names
        if name.startswith(TASK_DIR_PREFIX) and name.removeprefix(TASK_DIR_PREFIX).isdigit()
    )


class Task(ABC):
    """One unit of a connector's work: one Spark streaming query."""

    @abstractmethod
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        """Start the query and return it without waiting for data.

        Blocking (py4j); the runtime calls it in a worker thread whose scheduler pool is
        already set to the task's own. The query must checkpoint in
        `context.checkpoint_dir` so a restart, on any worker, resumes where it stopped.
        """


class Connector(ABC):
    """A plugin: validates a connector config, splits it into task configs, makes tasks.

    Instances are cheap and hold no state; the framework makes one whenever it asks.
    `config_model` parses the string config (dotted keys as field aliases) and should
    ignore keys it does not know, such as the framework's `name`, `connector.class`
    and `tasks.max`.
    """

    name: ClassVar[str]
    config_model: ClassVar[type[BaseModel]]
    connector_type: ClassVar[Literal["source", "sink"]]
    """Kafka Connect's `type` in REST answers: where the data flows from or to."""
    task_configs_refresh_ms: ClassVar[int | None] = None
    """For a connector whose split follows the outside world (new partitions, new
    files): how often the leader calls `task_configs` again and, when the answer
    changed, reconfigures the tasks. This is Connect's `requestTaskReconfiguration`,
    polled, since a plugin instance holds no state. None: only when the config changes."""

    output_path_keys: ClassVar[tuple[str, ...]] = ()
    """Settings that name a location this connector writes. Such a location may neither
    lie in `checkpoint.root` nor overlap another connector's: resetting one connector's
    offsets, or a careless path, must never touch another connector's data."""
    input_path_keys: ClassVar[tuple[str, ...]] = ()
    """Settings that name a location it reads; none may lie in `checkpoint.root`."""

    def validate(self, config: Mapping[str, str]) -> BaseModel:
        return parse_config(self.config_model, config)

    def validate_with_spark(self, config: Mapping[str, str], spark: SparkSession) -> None:
        """Checks only Spark can make (a SQL query, a DDL schema), run on the leader when a
        config is created, changed or validated; raise `ConnectorConfigError`. Blocking.
        Called only with a config `validate` accepted. None by default."""
        return None

    @abstractmethod
    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        """At most `max_tasks` task configs; the i-th goes to task i."""

    @abstractmethod
    def create_task(self) -> Task: ...


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
        if requested in self._by_alias:
            return self._by_alias[requested]
        matches = [
            c
            for c in self._by_alias.values()
            if requested in (c.__name__, c.__qualname__, qualified_name(c))
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


class _FrameworkSettings(BaseModel):
    """The settings every connector has, which the framework rather than the plugin reads."""

    model_config = ConfigDict(frozen=True)

    connector_class: NonEmptyStr = Field(alias=CONNECTOR_CLASS)
    tasks_max: int = Field(default=1, alias="tasks.max", ge=1, le=JAVA_INT_MAX)


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
    framework = parse_config(_FrameworkSettings, config)
    connector = registry.resolve(framework.connector_class)()
    return ValidatedConnector(connector, framework.tasks_max, connector.validate(config))
