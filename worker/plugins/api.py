"""The connector plugin API: what a connector author implements, and what a task is given.

A connector validates its config, splits its work into task configs, and makes tasks;
a task starts one Spark structured-streaming query. The framework owns everything
around that: the `tasks.max` setting, where checkpoints live, how a query's jobs are
tagged and scheduled, starting and stopping. This is the module a plugin imports
(docs/connectors/plugins.md: "a `worker.plugins.api.Connector` subclass"); how a
`connector.class` value finds a plugin is `worker.admission.registry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Final, Literal, TypeVar, get_args

from pydantic import BaseModel, SecretStr, StringConstraints, ValidationError
from pydantic_core import ErrorDetails

from worker.plugins.checkpoint_layout import TASK_DIR_PREFIX, checkpoint_dir_for, checkpointed_tasks
from worker.plugins.start_deadline import StartDeadline
from worker.plugins.task_claims import Claim

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

NonEmptyStr = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A string setting with its surrounding whitespace stripped; empty is refused."""
JAVA_INT_MAX: Final = 2**31 - 1
"""The bound of every integer setting, as Connect's INT type has: Spark takes these
values as Java ints or longs, and a larger one would reach it as an overflow."""
HIDDEN: Final = "[hidden]"
"""What is shown instead of a secret value, as Connect shows a PASSWORD."""
WHOLE_CONFIG: Final = "<config>"
"""The key a problem is filed under when it concerns no single setting."""

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


def secret_keys(model: type[BaseModel]) -> frozenset[str]:
    """The config keys of `model` that hold secrets: its `SecretStr` settings (Connect's
    PASSWORD type)."""
    return frozenset(
        field.alias or name
        for name, field in model.model_fields.items()
        if _holds_secret(field.annotation)
    )


def _holds_secret(annotation: object) -> bool:
    return annotation is SecretStr or any(_holds_secret(arg) for arg in get_args(annotation))


def _problem(error: ErrorDetails, secrets: frozenset[str]) -> ConfigProblem:
    """The problem as a user reads it, in a 400, a validate answer, a task's trace and
    the log: the value is echoed only when it is one setting's and no secret (a check of
    the whole config gets the whole config, secrets and all, as its input)."""
    key = ".".join(str(part) for part in error["loc"]) or WHOLE_CONFIG
    if error["type"] == "missing":
        return ConfigProblem(key, "missing required value")
    value = error["input"]
    if key == WHOLE_CONFIG or not isinstance(value, str | int | float | bool):
        return ConfigProblem(key, error["msg"])
    shown = HIDDEN if key in secrets or sounds_secret(key) else repr(value)
    return ConfigProblem(key, f"invalid value {shown}: {error['msg']}")


def sounds_secret(key: str) -> bool:
    """Kafka's own PASSWORD keys (`sasl.jaas.config`, `ssl.*.password`), under any prefix."""
    return key.endswith(("sasl.jaas.config", "password"))


def parse_config(model: type[Settings], config: Mapping[str, str]) -> Settings:
    """Parse string settings into `model`, turning pydantic's errors into a user's error."""
    try:
        return model.model_validate(dict(config))
    except ValidationError as exc:
        secrets = secret_keys(model)
        raise ConnectorConfigError(_problem(e, secrets) for e in exc.errors()) from None


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
    topic_creation_enabled: bool = True
    """The worker's `topic.creation.enable`: whether a source task may create the topics
    its connector's `topic.creation.*` keys describe (`worker.kafka.topic_admin`)."""
    deadline: StartDeadline = field(default_factory=StartDeadline)
    """This start's end (`task.start.timeout.ms`, or a stop that came first): whatever a
    task waits for while it starts (a back-off, a connection, a fetch) waits on it, never
    longer than `deadline.remaining()`."""

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


def task_output_path(output_path: str, task: int) -> str:
    """`<output_path>/task-<i>`: a file sink keeps its own commit log in its directory,
    so each task's query writes a directory of its own. A string, not a Path: the
    output may be a URI (s3a://, hdfs://) that Path would mangle."""
    return f"{output_path.rstrip('/')}/{TASK_DIR_PREFIX}{task}"


class Task(ABC):
    """One unit of a connector's work: one Spark streaming query."""

    @abstractmethod
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        """Start the query and return it without waiting for data.

        Blocking (py4j); the runtime calls it in a worker thread whose job tag is
        already set to the task's own. The query must checkpoint in
        `context.checkpoint_dir` so a restart, on any worker, resumes where it stopped.
        """


class Connector(ABC):
    """A plugin: validates a connector config, splits it into task configs, makes tasks.

    Instances are cheap and hold no state; the framework makes one whenever it asks.
    `config_model` parses the string config (dotted keys as field aliases) and should
    ignore keys it does not know, such as the framework's `name`, `connector.class`,
    `tasks.max` and `auto.restart.*`.
    """

    name: ClassVar[str]
    former_paths: ClassVar[tuple[str, ...]] = ()
    """Qualified names the class had before it moved: a `connector.class` stored with one
    (on the config topic, in a user's scripts) must still find the plugin."""
    version: ClassVar[str | None] = None
    """The plugin's version (KIP-891), as `GET /connector-plugins`, the statuses and
    `connector.plugin.version` know it. None: the version of the installed distribution
    that ships the plugin's package (a built-in's is sparkherd's)."""
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
    checkpoint_keys: ClassVar[tuple[str, ...]] = ()
    """Settings a task's checkpoint is bound to: one made under other values cannot be
    resumed (Spark's file sink keeps its commit log in the output directory, under the
    checkpoint's batch ids). A config that changes one of them is refused while a task
    has such a checkpoint (`worker.plugins.checkpoint_fingerprint`). Locations among them are
    compared in their normal form."""

    def validate(self, config: Mapping[str, str]) -> BaseModel:
        return parse_config(self.config_model, config)

    @classmethod
    def takes_initial_offsets(cls) -> bool:
        """Whether a new connector's tasks can start from offsets given at create
        (KIP-995's `initial_offsets`). A sink's are Kafka positions, which every sink task
        takes as it starts a fresh checkpoint. A source's become its checkpoint's first,
        committed batch, which suits a source whose offset alone says where it stands;
        not one that reads or writes files through Spark, whose file logs (the input's, in
        the checkpoint; the output's, in its directory) would lack that batch. A plugin
        that knows better says so."""
        return cls.connector_type == "sink" or not (cls.output_path_keys or cls.input_path_keys)

    def validate_with_spark(self, config: Mapping[str, str], spark: SparkSession) -> None:
        """Checks only Spark can make (a SQL query, a DDL schema), run on the leader when a
        config is created, changed or validated; raise `ConnectorConfigError`. Blocking.
        Called only with a config `validate` accepted. None by default."""
        return None

    @classmethod
    def warm_up(cls, spark: SparkSession, scratch: Path) -> None:
        """Run once before the worker joins its group, so that its first task of this kind
        does not pay for loading and compiling the JVM code of its writes (a table
        format's, say): typically a row written into `scratch`, a directory deleted
        afterwards. Blocking; a failure is logged and otherwise ignored. None by default."""
        return None

    def client_files(self, config: Mapping[str, str]) -> Mapping[str, Iterable[str]]:
        """Files on the worker that `config` (resolved, accepted by `validate`) names for
        its clients to read, by the key that names them, beyond `kafka.ssl.*.location`
        (which the framework knows): e.g. the TLS files of a database URL. The framework
        holds them to `connector.allowed.paths`. None by default."""
        return {}

    def kafka_topics(self, config: Mapping[str, str]) -> Mapping[str, Iterable[str]]:
        """The Kafka topics `config` (a connector's or a task's, resolved, accepted by
        `validate`) names to read, write or dead-letter into, by the key that names them.
        The framework refuses a config that names one of the worker's own topics
        (`worker.plugins.internal_topics`) before it is stored and again before a task
        starts. None by default."""
        return {}

    @abstractmethod
    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        """At most `max_tasks` task configs; the i-th goes to task i."""

    @abstractmethod
    def create_task(self) -> Task: ...


def has_own_warm_up(plugin: type[Connector]) -> bool:
    """Whether `plugin` overrides `Connector.warm_up`, which does nothing."""
    return getattr(plugin.warm_up, "__func__", None) is not getattr(
        Connector.warm_up, "__func__", None
    )
