"""Request and response bodies of the REST API, shaped exactly like Kafka Connect's."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal
from urllib.parse import quote

from pydantic import AfterValidator, BaseModel, Field
from typing_extensions import TypedDict

from herder.views import WorkerState
from rest.worker_seam import check_config_bounds, check_name

ConfigValue = str | int | float | bool | None


def _bounded(config: dict[str, ConfigValue]) -> dict[str, ConfigValue]:
    check_config_bounds(config)
    return config


ConnectorConfig = Annotated[dict[str, ConfigValue], AfterValidator(_bounded)]
"""A config (or a patch of one) from a request body: every route that takes one gets the
same bounds, refused as a 400 before the request is queued for the herder."""

ConnectorName = Annotated[str, AfterValidator(partial(check_name, what="connector name"))]
"""A connector name from a body or a path segment: both get exactly the same check, on
the decoded value the handler will use."""
LoggerName = Annotated[str, AfterValidator(partial(check_name, what="logger name"))]


def connector_location(name: str) -> str:
    """The `Location` of a connector: the name percent-encoded, so any name that passed
    the check makes a valid header."""
    return f"/connectors/{quote(name, safe='')}"


def config_string(value: ConfigValue) -> str:
    """Connect's configs are strings; JSON numbers and booleans are accepted as their text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def string_config(config: dict[str, ConfigValue]) -> dict[str, str]:
    return {key: config_string(value) for key, value in config.items()}


InitialState = Literal["RUNNING", "PAUSED", "STOPPED"]


class ConnectorOffsetBody(BaseModel):
    partition: dict[str, Any] = Field(
        description='a Kafka sink\'s, as Connect names it: {"kafka_topic", "kafka_partition"}; '
        'a source task\'s: {"task": n, "source": i} (source defaults to 0), which a sink\'s '
        "PATCH takes too"
    )
    offset: Any = Field(
        description="the source's end offset to resume after (a sink's initial one: "
        '{"kafka_offset": n}, the next to read); null resets'
    )


class CreateConnectorRequest(BaseModel):
    name: ConnectorName = Field(description="Unique connector name")
    config: ConnectorConfig = Field(description="Connector configuration")
    initial_state: InitialState | None = Field(
        default=None, description="KIP-980: the state the connector starts in (RUNNING if unset)"
    )
    initial_offsets: list[ConnectorOffsetBody] | None = Field(
        default=None,
        description="KIP-995: where the new connector's tasks start; checked before "
        "anything is written",
    )


class TaskIdBody(BaseModel):
    connector: str
    task: int


class ConnectorInfoBody(BaseModel):
    name: str
    config: dict[str, str]
    tasks: list[TaskIdBody]
    type: str
    offsets_status: str | None = Field(
        default=None,
        exclude_if=lambda status: status is None,
        description="KIP-995: how a create's initial_offsets were applied; absent without",
    )


class TaskInfoBody(BaseModel):
    id: TaskIdBody
    config: dict[str, str]


def _trace() -> Any:
    """A state's `trace`, left out of the body when there is none, as Kafka Connect
    does (a client tests for the key, not for null)."""
    return Field(
        default=None,
        exclude_if=lambda trace: trace is None,
        description="the failure's stack trace; absent unless the state is FAILED",
    )


def _version() -> Any:
    """A state's plugin `version` (KIP-891), left out when the plugin has none, as Kafka
    Connect leaves out an undefined one."""
    return Field(
        default=None,
        exclude_if=lambda version: version is None,
        description="the version of the connector's plugin on this worker (KIP-891); "
        "absent when this worker has no version of it",
    )


class ConnectorStateBody(BaseModel):
    state: str
    worker_id: str | None = Field(description="null while no worker has reported a state")
    trace: str | None = _trace()
    version: str | None = _version()


class TaskStateBody(BaseModel):
    id: int
    state: str
    worker_id: str | None = Field(description="null while no worker has reported a state")
    trace: str | None = _trace()
    version: str | None = _version()
    started_at: str | None = Field(
        default=None, description="ISO-8601 start time of the task's current run"
    )


class ConnectorStatusBody(BaseModel):
    name: str
    connector: ConnectorStateBody
    tasks: list[TaskStateBody]
    type: str


class ExpandedConnectorBody(TypedDict, total=False):
    """One entry of `GET /connectors?expand=...`: only the parts that were asked for,
    the others left out (not null), as Kafka Connect does."""

    status: ConnectorStatusBody
    info: ConnectorInfoBody


class ServerInfoBody(BaseModel):
    version: str
    commit: str
    kafka_cluster_id: str | None


class ErrorBody(BaseModel):
    error_code: int
    message: str


class HealthBody(BaseModel):
    status: str = Field(description="healthy, starting or unhealthy")
    message: str


class WorkerBody(BaseModel):
    id: str
    url: str
    connectors: list[str]
    tasks: list[str] = Field(description="task ids as <connector>-<n>")
    state: WorkerState | None = Field(
        None,
        description="this worker's own state (warming, joining, running, leaving, "
        "unhealthy); null for the others, whose state only they know",
    )


class ClusterBody(BaseModel):
    leader: str | None = Field(description="the leader's REST URL, null while unknown")
    generation: int
    protocol_version: int
    scheduled_rebalance_ms: int = Field(description="time left of this worker's delay")
    workers: list[WorkerBody]
