"""The config topic's records: their keys and values as Kafka Connect writes them, and
what a sequence of them says (`ConfigReplay`, a `ConfigSnapshot`). Pure: reading and
writing the topic is `herder.stores.config_store`'s.

The record keys follow Kafka Connect's (`connector-<c>`, `task-<c>-<n>`, `commit-<c>`,
`target-state-<c>`, `restart-connector-<c>`, `logger-cluster-<namespace>`) so an
operator reading the topic finds what they know. Task configs become visible only with
their commit record, so a worker never runs half of a new set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from herder.assignor.snapshot import HandedOver
from protocol.messages import Allocation, ConnectorTaskId

CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-connector-"
LOGGER_PREFIX = "logger-cluster-"
REBALANCE_REQUEST_KEY = "rebalance-request"
HANDED_OVER_PREFIX = "handed-over-"


class TargetState(StrEnum):
    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


TaskConfig = Mapping[str, str]


@dataclass(frozen=True)
class RestartRequest:
    """A restart the leader recorded; whichever worker runs the work carries it out
    (Kafka's KIP-745), so a restart needs no forwarding to the owner.

    `task` set: exactly that task, whatever its state (`POST .../tasks/{t}/restart`).
    Otherwise the connector, and with `include_tasks` its tasks; `only_failed` limits
    both to what is FAILED.
    """

    connector: str
    include_tasks: bool = False
    only_failed: bool = False
    task: int | None = None

    def covers_connector(self, failed: bool) -> bool:
        return self.task is None and (failed or not self.only_failed)

    def covers_task(self, task: ConnectorTaskId, failed: bool) -> bool:
        if task.connector != self.connector:
            return False
        if self.task is not None:
            return task.task == self.task
        return self.include_tasks and (failed or not self.only_failed)


@dataclass(frozen=True)
class ConfigSnapshot:
    """An immutable view of the config topic up to (excluding) `offset`."""

    offset: int = 0
    connectors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    target_states: Mapping[str, TargetState] = field(default_factory=dict)
    task_configs: Mapping[str, tuple[TaskConfig, ...]] = field(default_factory=dict)
    handed_over: Mapping[str, HandedOver] = field(default_factory=dict)
    """Tasks handed over by a worker that left, by its identity (see `HandedOver`)."""

    def target_state(self, connector: str) -> TargetState:
        return self.target_states.get(connector, TargetState.STARTED)

    def tasks_of(self, connector: str) -> tuple[TaskConfig, ...]:
        """A connector's committed task configs; none while it is STOPPED."""
        if connector not in self.connectors or self.target_state(connector) is TargetState.STOPPED:
            return ()
        return self.task_configs.get(connector, ())

    def task_counts(self) -> dict[str, int]:
        return {name: len(self.tasks_of(name)) for name in self.connectors}

    def configured(self) -> Allocation:
        return Allocation.of(
            self.connectors,
            (ConnectorTaskId(c, i) for c, n in self.task_counts().items() for i in range(n)),
        )

    def task_config(self, task: ConnectorTaskId) -> TaskConfig | None:
        configs = self.tasks_of(task.connector)
        return configs[task.task] if 0 <= task.task < len(configs) else None


ConfigRecord = tuple[str, dict[str, Any] | None]
"""A config topic record before encoding: its key, and its value or None (a tombstone)."""


def connector_records(
    name: str, config: Mapping[str, str], target_state: TargetState | None = None
) -> list[ConfigRecord]:
    """A connector's config; with `target_state`, that state first."""
    first = [] if target_state is None else target_state_records(name, target_state)
    return [*first, (CONNECTOR_PREFIX + name, {"properties": dict(config)})]


def target_state_records(name: str, state: TargetState) -> list[ConfigRecord]:
    return [(TARGET_STATE_PREFIX + name, {"state": state.value})]


def task_config_records(name: str, configs: list[dict[str, str]]) -> list[ConfigRecord]:
    """The task configs, then the commit record that makes them visible together."""
    tasks: list[ConfigRecord] = [
        (f"{TASK_PREFIX}{name}-{index}", {"properties": config})
        for index, config in enumerate(configs)
    ]
    return [*tasks, (COMMIT_PREFIX + name, {"tasks": len(configs)})]


def restart_records(request: RestartRequest) -> list[ConfigRecord]:
    value = {
        "include-tasks": request.include_tasks,
        "only-failed": request.only_failed,
        "task": request.task,
    }
    return [(RESTART_PREFIX + request.connector, value)]


def deletion_records(name: str) -> list[ConfigRecord]:
    return [
        (CONNECTOR_PREFIX + name, None),
        (TARGET_STATE_PREFIX + name, None),
        (RESTART_PREFIX + name, None),
    ]


class ConfigReplay:
    """What the records read so far say; `copy` gives a scratch one to apply planned
    records to (`ConfigStore.planned`)."""

    def __init__(self) -> None:
        self.connectors: dict[str, dict[str, str]] = {}
        self.target_states: dict[str, TargetState] = {}
        self.pending_tasks: dict[str, dict[int, dict[str, str]]] = {}
        self.committed: dict[str, tuple[TaskConfig, ...]] = {}
        self.restart_requests: list[RestartRequest] = []
        self.logger_levels: list[tuple[str, str]] = []
        self.handed_over: dict[str, HandedOver] = {}

    def copy(self) -> ConfigReplay:
        """The configs, states and task configs (not the requests and levels to act on)."""
        other = ConfigReplay()
        other.connectors = {name: dict(config) for name, config in self.connectors.items()}
        other.target_states = dict(self.target_states)
        other.pending_tasks = {name: dict(tasks) for name, tasks in self.pending_tasks.items()}
        other.committed = dict(self.committed)
        other.handed_over = dict(self.handed_over)
        return other

    def snapshot(self, offset: int) -> ConfigSnapshot:
        return ConfigSnapshot(
            offset=offset,
            connectors=MappingProxyType({k: dict(v) for k, v in self.connectors.items()}),
            target_states=MappingProxyType(dict(self.target_states)),
            task_configs=MappingProxyType(dict(self.committed)),
            handed_over=MappingProxyType(dict(self.handed_over)),
        )

    def apply(self, key: str, value: dict[str, Any] | None) -> None:
        if key.startswith(CONNECTOR_PREFIX):
            self._apply_connector(key.removeprefix(CONNECTOR_PREFIX), value)
        elif key.startswith(TARGET_STATE_PREFIX):
            name = key.removeprefix(TARGET_STATE_PREFIX)
            if value is None:
                self.target_states.pop(name, None)
            else:
                self.target_states[name] = TargetState(value["state"])
        elif key.startswith(RESTART_PREFIX) and value is not None:
            self.restart_requests.append(
                RestartRequest(
                    connector=key.removeprefix(RESTART_PREFIX),
                    include_tasks=bool(value["include-tasks"]),
                    only_failed=bool(value["only-failed"]),
                    task=None if value.get("task") is None else int(value["task"]),
                )
            )
        elif key.startswith(LOGGER_PREFIX) and value is not None:
            self.logger_levels.append((key.removeprefix(LOGGER_PREFIX), str(value["level"])))
        elif key.startswith(COMMIT_PREFIX):
            self._apply_commit(key.removeprefix(COMMIT_PREFIX), value)
        elif key.startswith(HANDED_OVER_PREFIX):
            self._apply_handed_over(key.removeprefix(HANDED_OVER_PREFIX), value)
        elif key.startswith(TASK_PREFIX):
            name, _, index = key.removeprefix(TASK_PREFIX).rpartition("-")
            if value is not None:
                self.pending_tasks.setdefault(name, {})[int(index)] = config_properties(value)

    def _apply_connector(self, name: str, value: dict[str, Any] | None) -> None:
        if value is None:
            self.connectors.pop(name, None)
            self.committed.pop(name, None)
            self.pending_tasks.pop(name, None)
        else:
            self.connectors[name] = config_properties(value)

    def _apply_handed_over(self, identity: str, value: dict[str, Any] | None) -> None:
        if value is None:
            self.handed_over.pop(identity, None)
            return
        self.handed_over[identity] = HandedOver(
            int(value["until-ms"]),
            {str(c): frozenset(int(t) for t in tasks) for c, tasks in value["tasks"].items()},
        )

    def _apply_commit(self, name: str, value: dict[str, Any] | None) -> None:
        if value is None:
            return
        count = int(value["tasks"])
        pending = self.pending_tasks.get(name, {})
        if all(i in pending for i in range(count)):
            self.committed[name] = tuple(pending[i] for i in range(count))
            self.pending_tasks[name] = {}


def config_properties(value: dict[str, Any]) -> dict[str, str]:
    """A config's properties; the leader writes only strings, so anything else is no
    record of this topic."""
    properties = value["properties"]
    if not isinstance(properties, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in properties.items()
    ):
        raise TypeError("properties are not a map of strings")
    return dict(properties)
