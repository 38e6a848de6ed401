"""Connector and task statuses, kept on the compacted status topic.

Every worker writes the status of what it runs, tagged with the group generation it
runs it in. A write from an older generation by another worker is a zombie's or a late
one's and is ignored on read, so the newest owner's word always wins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TypeVar

from herder.stores.kafka_log import OpenLog
from protocol.messages import Allocation, ConnectorTaskId
from worker.plugins.task_state import TaskState

CONNECTOR_STATUS_PREFIX = "status-connector-"
TASK_STATUS_PREFIX = "status-task-"

K = TypeVar("K")


@dataclass(frozen=True)
class Status:
    state: TaskState
    worker_id: str
    generation: int
    trace: str | None = None
    started_at: str | None = None

    def supersedes(self, older: Status) -> bool:
        """A worker's own word, or one from a generation at least as new. A task handed
        over in the round that revokes it is stopped and started in one generation: the
        old owner's UNASSIGNED, written late, must not hide the new owner's state."""
        if self.worker_id == older.worker_id:
            return True
        if self.state is TaskState.UNASSIGNED:
            return self.generation > older.generation
        return self.generation >= older.generation


class StatusStore:
    """Replays the status topic into memory and writes this worker's statuses."""

    def __init__(self, open_log: OpenLog) -> None:
        self._log = open_log(self._apply)
        self._connectors: dict[str, Status] = {}
        self._tasks: dict[ConnectorTaskId, Status] = {}

    async def start(self) -> None:
        await self._log.start()

    async def stop(self) -> None:
        await self._log.stop()

    async def read_to_end(self, timeout_s: float = 30.0) -> int:
        return await self._log.read_to_end(timeout_s)

    def connector(self, name: str) -> Status | None:
        return self._connectors.get(name)

    def task(self, task: ConnectorTaskId) -> Status | None:
        return self._tasks.get(task)

    def tasks_of(self, connector: str) -> dict[int, Status]:
        return {t.task: s for t, s in self._tasks.items() if t.connector == connector}

    def owners(self) -> dict[str, Allocation]:
        """What each worker last said it runs (any state but UNASSIGNED), by worker id."""
        connectors: dict[str, set[str]] = {}
        tasks: dict[str, set[ConnectorTaskId]] = {}
        for name, status in self._connectors.items():
            if status.state is not TaskState.UNASSIGNED:
                connectors.setdefault(status.worker_id, set()).add(name)
        for task, status in self._tasks.items():
            if status.state is not TaskState.UNASSIGNED:
                tasks.setdefault(status.worker_id, set()).add(task)
        return {
            worker: Allocation.of(connectors.get(worker, ()), tasks.get(worker, ()))
            for worker in connectors.keys() | tasks.keys()
        }

    async def put_connector(self, name: str, status: Status) -> None:
        await self._write(CONNECTOR_STATUS_PREFIX + name, status)

    async def put_task(self, task: ConnectorTaskId, status: Status) -> None:
        await self._write(f"{TASK_STATUS_PREFIX}{task.connector}-{task.task}", status)

    async def delete_connector(self, name: str, task_count: int) -> None:
        """Tombstone a deleted connector's statuses so they do not outlive it."""
        await self._write(CONNECTOR_STATUS_PREFIX + name, None)
        for index in range(task_count):
            await self._write(f"{TASK_STATUS_PREFIX}{name}-{index}", None)

    async def _write(self, key: str, status: Status | None) -> None:
        payload = None if status is None else json.dumps(asdict(status)).encode()
        await self._log.send(key.encode(), payload)

    def _apply(self, raw_key: bytes, raw_value: bytes | None, offset: int) -> None:
        key = raw_key.decode()
        status = None if raw_value is None else _decode(raw_value)
        if key.startswith(CONNECTOR_STATUS_PREFIX):
            _merge(self._connectors, key.removeprefix(CONNECTOR_STATUS_PREFIX), status)
        elif key.startswith(TASK_STATUS_PREFIX):
            name, _, index = key.removeprefix(TASK_STATUS_PREFIX).rpartition("-")
            _merge(self._tasks, ConnectorTaskId(name, int(index)), status)


def not_shown_elsewhere(work: Allocation, owners: Mapping[str, Allocation], me: str) -> Allocation:
    """What of `work` no worker but `me` says it runs (`StatusStore.owners`): work this
    worker handed over is in good hands once this is empty."""
    elsewhere = Allocation.of()
    for worker, owned in owners.items():
        if worker != me:
            elsewhere = elsewhere.union(owned)
    return work.minus(elsewhere)


def _merge(statuses: dict[K, Status], key: K, status: Status | None) -> None:
    if status is None:
        statuses.pop(key, None)
        return
    current = statuses.get(key)
    if current is None or status.supersedes(current):
        statuses[key] = status


def _decode(raw: bytes) -> Status:
    fields = json.loads(raw)
    return Status(
        state=TaskState(fields["state"]),
        worker_id=str(fields["worker_id"]),
        generation=int(fields["generation"]),
        trace=fields.get("trace"),
        started_at=fields.get("started_at"),
    )
