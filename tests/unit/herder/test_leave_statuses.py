"""A leaving worker's answer does not run ahead of its statuses: once `leave_for_good`
says "handed over", the status store shows none of its stopped tasks here, each on the
worker that took it. A caller that read the status right after the answer saw them
RUNNING on the worker that had just stopped them (test_scale_down[tansu] failed so); the
status topic here takes a moment to acknowledge a write, as a broker across a network
does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from herder.stores.kafka_log import RecordHandler
from herder.stores.status_store import StatusStore
from tests.unit.herder import memory_cluster
from tests.unit.herder.memory_cluster import (
    BYSTANDER,
    LoneCoordinator,
    MemoryLog,
    take_up,
    until,
)
from worker.plugins.task_state import TaskState

CONFIG = {"connector.class": "counting", "tasks.max": "2"}
ACK_S = 0.3


class SlowlyAcknowledgedLog(MemoryLog):
    """A topic whose broker acknowledges each write `ACK_S` after it was sent."""

    async def send(self, key: bytes, value: bytes | None) -> int:
        await asyncio.sleep(ACK_S)
        return await super().send(key, value)


def slow_status_store(open_log: object) -> StatusStore:
    """The herder's status store, on the slowly acknowledged topic instead of `open_log`."""

    def slow(on_record: RecordHandler) -> SlowlyAcknowledgedLog:
        return SlowlyAcknowledgedLog(on_record)

    return StatusStore(slow)


async def test_handed_over_means_the_status_no_longer_shows_the_tasks_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_cluster, "StatusStore", slow_status_store)
    coordinator = LoneCoordinator(bystander=BYSTANDER)
    async with memory_cluster.running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("moving", CONFIG)
        await until(lambda: len(runtime.running) == 1, "its share: one task of two")
        (task,) = runtime.running
        await until(
            lambda: (s := herder.statuses.task(task)) is not None and s.state is TaskState.RUNNING,
            "its RUNNING status",
        )

        handed = herder.owned
        leaving = asyncio.create_task(herder.leave_for_good(5.0))
        await until(lambda: not runtime.running, "its task stopped")
        await take_up(herder, handed)
        assert await leaving

        status = herder.statuses.task(task)
        assert status is not None
        assert status.worker_id == BYSTANDER.worker_id, status
