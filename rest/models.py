"""Request and response bodies of the REST API, shaped exactly like Kafka Connect's."""

from __future__ import annotations

import unicodedata
from typing import Literal

from pydantic import BaseModel, Field, field_validator

MAX_NAME_LENGTH = 255

ConfigValue = str | int | float | bool | None


def check_connector_name(name: str) -> str:
    """Refuse names that cannot be addressed in a URL path or used as a directory name."""
    if not name or name != name.strip():
        raise ValueError("connector name must be non-empty and without surrounding whitespace")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"connector name must be at most {MAX_NAME_LENGTH} characters")
    if name in (".", "..") or any(c in name for c in "/\\"):
        raise ValueError("connector name must not contain '/' or '\\' nor be '.' or '..'")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in name):
        raise ValueError("connector name must not contain control characters")
    return name


def config_string(value: ConfigValue) -> str:
    """Connect's configs are strings; JSON numbers and booleans are accepted as their text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def string_config(config: dict[str, ConfigValue]) -> dict[str, str]:
    return {key: config_string(value) for key, value in config.items()}


InitialState = Literal["RUNNING", "PAUSED", "STOPPED"]


class CreateConnectorRequest(BaseModel):
    name: str = Field(description="Unique connector name")
    config: dict[str, ConfigValue] = Field(description="Connector configuration")
    initial_state: InitialState | None = Field(
        default=None, description="KIP-980: the state the connector starts in (RUNNING if unset)"
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        return check_connector_name(name)


class TaskIdBody(BaseModel):
    connector: str
    task: int


class ConnectorInfoBody(BaseModel):
    name: str
    config: dict[str, str]
    tasks: list[TaskIdBody]
    type: str


class TaskInfoBody(BaseModel):
    id: TaskIdBody
    config: dict[str, str]


class ConnectorStateBody(BaseModel):
    state: str
    worker_id: str | None = Field(description="null while no worker has reported a state")
    trace: str | None = None


class TaskStateBody(BaseModel):
    id: int
    state: str
    worker_id: str | None = Field(description="null while no worker has reported a state")
    trace: str | None = None
    started_at: str | None = Field(
        default=None, description="ISO-8601 start time of the task's current run"
    )


class ConnectorStatusBody(BaseModel):
    name: str
    connector: ConnectorStateBody
    tasks: list[TaskStateBody]
    type: str


class ExpandedConnectorBody(BaseModel):
    """One entry of `GET /connectors?expand=...`: only the parts that were asked for."""

    status: ConnectorStatusBody | None = None
    info: ConnectorInfoBody | None = None


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


class ClusterBody(BaseModel):
    leader: str | None = Field(description="the leader's REST URL, null while unknown")
    generation: int
    protocol_version: int
    scheduled_rebalance_ms: int = Field(description="time left of this worker's delay")
    workers: list[WorkerBody]
