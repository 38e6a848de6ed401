"""Connector configs, task configs and target states, kept on the compacted config topic.

The record keys follow Kafka Connect's (`connector-<c>`, `task-<c>-<n>`, `commit-<c>`,
`target-state-<c>`, `restart-connector-<c>`, `logger-cluster-<namespace>`) so an
operator reading the topic finds what they know. Task configs become visible only with
their commit record, so a worker never runs half of a new set.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from types import MappingProxyType
from typing import Any

from herder.assignor.snapshot import HandedOver
from herder.kafka_log import OpenLog
from protocol.messages import Allocation, ConnectorTaskId

log = logging.getLogger(__name__)

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
                self.pending_tasks.setdefault(name, {})[int(index)] = _strings(value)

    def _apply_connector(self, name: str, value: dict[str, Any] | None) -> None:
        if value is None:
            self.connectors.pop(name, None)
            self.committed.pop(name, None)
            self.pending_tasks.pop(name, None)
        else:
            self.connectors[name] = _strings(value)

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


@dataclass(eq=False)
class _Staged:
    """A record sent, and the task that waits until it is acknowledged and read back."""

    record: ConfigRecord
    durable: asyncio.Task[None]


class ConfigStore:
    """Replays the config topic into a `ConfigSnapshot` and writes changes to it.

    A write is durable once its records are acknowledged and read back. The request
    lane *stages* a batch's records instead (`stage`: sent, not awaited) and makes them
    durable together (`flush`), so a batch of writes costs one acknowledgement and one
    read back, not one each; `planned` is the config as the staged records will leave
    it, which each write of the batch checks against.
    """

    def __init__(self, open_log: OpenLog) -> None:
        self._log = open_log(self._apply)
        self._replay = ConfigReplay()
        self._staged: list[_Staged] = []
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, listener: Callable[[], None]) -> None:
        """`listener` runs after every applied record, on the event loop."""
        self._listeners.append(listener)

    async def start(self) -> None:
        await self._log.start()

    async def stop(self) -> None:
        for staged in self._staged:
            staged.durable.cancel()
        await self._log.stop()

    async def read_to_end(self, timeout_s: float = 30.0) -> int:
        return await self._log.read_to_end(timeout_s)

    async def catch_up(self) -> None:
        """Read to the end, unless records staged since are still on their way: the
        write that staged them read to the end before, in the same batch of the lane, and
        they are the records that batch added."""
        if not self._staged:
            await self.read_to_end()

    def has_connector(self, name: str) -> bool:
        return name in self._replay.connectors

    def take_restart_requests(self) -> list[RestartRequest]:
        """The restart requests read since the last call, oldest first."""
        taken, self._replay.restart_requests = self._replay.restart_requests, []
        return taken

    def take_logger_levels(self) -> list[tuple[str, str]]:
        """The cluster-wide `(namespace, level)` changes read since the last call, oldest first."""
        taken, self._replay.logger_levels = self._replay.logger_levels, []
        return taken

    def snapshot(self) -> ConfigSnapshot:
        return self._replay.snapshot(self._log.position)

    def planned(self, *more: ConfigRecord) -> ConfigSnapshot:
        """The snapshot with the staged records (and `more`) applied: the config as it
        will be once they are read back. Applying a record already read again changes
        nothing (each sets its key), so a staged record read back early is harmless."""
        if not self._staged and not more:
            return self.snapshot()
        replay = self._replay.copy()
        for record in (*(staged.record for staged in self._staged), *more):
            replay.apply(*record)
        return replay.snapshot(self._log.position)

    async def stage(self, records: list[ConfigRecord]) -> asyncio.Task[None]:
        """Send `records` in order without waiting for them; the task returned ends once
        they are read back (or fails with the broker's refusal), and `flush` waits for
        it too. They leave `planned` then, whether anyone waits or not (a caller may go
        away)."""
        offsets = []
        for key, value in records:
            payload = None if value is None else json.dumps(value, sort_keys=True).encode()
            offsets.append(await self._log.send_soon(key.encode(), payload))
        durable = asyncio.create_task(self._read_back(offsets), name="config-read-back")
        staged = [_Staged(record, durable) for record in records]
        self._staged += staged
        durable.add_done_callback(partial(self._settled, staged))
        return durable

    async def flush(self) -> None:
        """Wait until every record staged before this call is acknowledged and read back.
        Calls that overlap share the wait: they await the same acknowledgements and the
        same reader, with no request of their own. A record the broker refused fails
        every flush that waits for it."""
        waits = {staged.durable for staged in self._staged}
        await asyncio.gather(*(asyncio.shield(wait) for wait in waits))

    async def _read_back(self, offsets: list[asyncio.Future[int]]) -> None:
        acknowledged = await asyncio.gather(*offsets)
        await self._log.read_through(max(acknowledged))

    def _settled(self, staged: list[_Staged], durable: asyncio.Task[None]) -> None:
        self._staged = [s for s in self._staged if s not in staged]
        if not durable.cancelled() and (exc := durable.exception()) is not None:
            log.error("config records not written: %s", exc)

    async def write(self, records: list[ConfigRecord]) -> None:
        """Write `records` and wait until they are read back."""
        await self.stage(records)
        await self.flush()

    async def put_logger_level(self, namespace: str, level: str) -> None:
        await self.write([(LOGGER_PREFIX + namespace, {"level": level})])

    async def request_rebalance(self, generation: int, reason: str) -> None:
        """Advance the config offset so the leader's next JoinGroup carries new metadata.

        A coordinator may answer a rejoin with unchanged metadata from the current
        generation instead of starting a rebalance (Tansu does, even for the leader), so a
        scheduled rebalance needs the leader's subscription to differ. One key, compacted,
        so these records do not accumulate.
        """
        await self.write([(REBALANCE_REQUEST_KEY, {"generation": generation, "reason": reason})])

    async def put_handed_over(self, identity: str, handed: HandedOver | None) -> None:
        """Record (or, with None, clear) what a leaving worker handed over, so that a
        leader elected after the one that planned the hand-over can give it back."""
        value = None
        if handed is not None:
            tasks = {c: sorted(numbers) for c, numbers in sorted(handed.tasks.items())}
            value = {"until-ms": handed.until_ms, "tasks": tasks}
        await self.write([(HANDED_OVER_PREFIX + identity, value)])

    def _apply(self, raw_key: bytes, raw_value: bytes | None, offset: int) -> None:
        value: dict[str, Any] | None = None if raw_value is None else json.loads(raw_value)
        self._replay.apply(raw_key.decode(), value)
        for listener in self._listeners:
            listener()


def _strings(value: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in value["properties"].items()}
