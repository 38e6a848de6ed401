"""Connector configs, task configs and target states, kept on the compacted config topic.

The record keys follow Kafka Connect's (`connector-<c>`, `task-<c>-<n>`, `commit-<c>`,
`target-state-<c>`, `restart-connector-<c>`, `logger-cluster-<namespace>`) so an
operator reading the topic finds what they know. Task configs become visible only with
their commit record, so a worker never runs half of a new set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from herder.assignor.snapshot import HandedOver
from herder.kafka_log import OpenLog
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


class ConfigStore:
    """Replays the config topic into a `ConfigSnapshot` and writes changes to it."""

    def __init__(self, open_log: OpenLog) -> None:
        self._log = open_log(self._apply)
        self._connectors: dict[str, dict[str, str]] = {}
        self._target_states: dict[str, TargetState] = {}
        self._pending_tasks: dict[str, dict[int, dict[str, str]]] = {}
        self._committed: dict[str, tuple[TaskConfig, ...]] = {}
        self._restart_requests: list[RestartRequest] = []
        self._logger_levels: list[tuple[str, str]] = []
        self._handed_over: dict[str, HandedOver] = {}
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, listener: Callable[[], None]) -> None:
        """`listener` runs after every applied record, on the event loop."""
        self._listeners.append(listener)

    async def start(self) -> None:
        await self._log.start()

    async def stop(self) -> None:
        await self._log.stop()

    async def read_to_end(self, timeout_s: float = 30.0) -> int:
        return await self._log.read_to_end(timeout_s)

    def has_connector(self, name: str) -> bool:
        return name in self._connectors

    def take_restart_requests(self) -> list[RestartRequest]:
        """The restart requests read since the last call, oldest first."""
        taken, self._restart_requests = self._restart_requests, []
        return taken

    def take_logger_levels(self) -> list[tuple[str, str]]:
        """The cluster-wide `(namespace, level)` changes read since the last call, oldest first."""
        taken, self._logger_levels = self._logger_levels, []
        return taken

    def snapshot(self) -> ConfigSnapshot:
        return ConfigSnapshot(
            offset=self._log.position,
            connectors=MappingProxyType({k: dict(v) for k, v in self._connectors.items()}),
            target_states=MappingProxyType(dict(self._target_states)),
            task_configs=MappingProxyType(dict(self._committed)),
            handed_over=MappingProxyType(dict(self._handed_over)),
        )

    async def put_connector_config(
        self, name: str, config: Mapping[str, str], target_state: TargetState | None = None
    ) -> None:
        """Write a connector's config; with `target_state`, write that state first."""
        if target_state is not None:
            await self.put_target_state(name, target_state)
        await self._write(CONNECTOR_PREFIX + name, {"properties": dict(config)})

    async def put_target_state(self, name: str, state: TargetState) -> None:
        await self._write(TARGET_STATE_PREFIX + name, {"state": state.value})

    async def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        for index, config in enumerate(configs):
            await self._write(f"{TASK_PREFIX}{name}-{index}", {"properties": config})
        await self._write(COMMIT_PREFIX + name, {"tasks": len(configs)})

    async def put_restart_request(self, request: RestartRequest) -> None:
        await self._write(
            RESTART_PREFIX + request.connector,
            {
                "include-tasks": request.include_tasks,
                "only-failed": request.only_failed,
                "task": request.task,
            },
        )

    async def put_logger_level(self, namespace: str, level: str) -> None:
        await self._write(LOGGER_PREFIX + namespace, {"level": level})

    async def request_rebalance(self, generation: int, reason: str) -> None:
        """Advance the config offset so the leader's next JoinGroup carries new metadata.

        A coordinator may answer a rejoin with unchanged metadata from the current
        generation instead of starting a rebalance (Tansu does, even for the leader), so a
        scheduled rebalance needs the leader's subscription to differ. One key, compacted,
        so these records do not accumulate.
        """
        await self._write(REBALANCE_REQUEST_KEY, {"generation": generation, "reason": reason})

    async def put_handed_over(self, identity: str, handed: HandedOver | None) -> None:
        """Record (or, with None, clear) what a leaving worker handed over, so that a
        leader elected after the one that planned the hand-over can give it back."""
        value = None
        if handed is not None:
            tasks = {c: sorted(numbers) for c, numbers in sorted(handed.tasks.items())}
            value = {"until-ms": handed.until_ms, "tasks": tasks}
        await self._write(HANDED_OVER_PREFIX + identity, value)

    async def delete_connector(self, name: str) -> None:
        await self._write(CONNECTOR_PREFIX + name, None)
        await self._write(TARGET_STATE_PREFIX + name, None)
        await self._write(RESTART_PREFIX + name, None)

    async def _write(self, key: str, value: dict[str, Any] | None) -> None:
        payload = None if value is None else json.dumps(value, sort_keys=True).encode()
        await self._log.send(key.encode(), payload)

    def _apply(self, raw_key: bytes, raw_value: bytes | None, offset: int) -> None:
        key = raw_key.decode()
        value: dict[str, Any] | None = None if raw_value is None else json.loads(raw_value)
        if key.startswith(CONNECTOR_PREFIX):
            self._apply_connector(key.removeprefix(CONNECTOR_PREFIX), value)
        elif key.startswith(TARGET_STATE_PREFIX):
            name = key.removeprefix(TARGET_STATE_PREFIX)
            if value is None:
                self._target_states.pop(name, None)
            else:
                self._target_states[name] = TargetState(value["state"])
        elif key.startswith(RESTART_PREFIX) and value is not None:
            self._restart_requests.append(
                RestartRequest(
                    connector=key.removeprefix(RESTART_PREFIX),
                    include_tasks=bool(value["include-tasks"]),
                    only_failed=bool(value["only-failed"]),
                    task=None if value.get("task") is None else int(value["task"]),
                )
            )
        elif key.startswith(LOGGER_PREFIX) and value is not None:
            self._logger_levels.append((key.removeprefix(LOGGER_PREFIX), str(value["level"])))
        elif key.startswith(COMMIT_PREFIX):
            self._apply_commit(key.removeprefix(COMMIT_PREFIX), value)
        elif key.startswith(HANDED_OVER_PREFIX):
            self._apply_handed_over(key.removeprefix(HANDED_OVER_PREFIX), value)
        elif key.startswith(TASK_PREFIX):
            name, _, index = key.removeprefix(TASK_PREFIX).rpartition("-")
            if value is not None:
                self._pending_tasks.setdefault(name, {})[int(index)] = _strings(value)
        for listener in self._listeners:
            listener()

    def _apply_connector(self, name: str, value: dict[str, Any] | None) -> None:
        if value is None:
            self._connectors.pop(name, None)
            self._committed.pop(name, None)
            self._pending_tasks.pop(name, None)
        else:
            self._connectors[name] = _strings(value)

    def _apply_handed_over(self, identity: str, value: dict[str, Any] | None) -> None:
        if value is None:
            self._handed_over.pop(identity, None)
            return
        self._handed_over[identity] = HandedOver(
            int(value["until-ms"]),
            {str(c): frozenset(int(t) for t in tasks) for c, tasks in value["tasks"].items()},
        )

    def _apply_commit(self, name: str, value: dict[str, Any] | None) -> None:
        if value is None:
            return
        count = int(value["tasks"])
        pending = self._pending_tasks.get(name, {})
        if all(i in pending for i in range(count)):
            self._committed[name] = tuple(pending[i] for i in range(count))
            self._pending_tasks[name] = {}


def _strings(value: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in value["properties"].items()}
