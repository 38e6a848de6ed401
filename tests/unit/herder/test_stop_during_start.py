"""A task revoked or deleted while its start is under way (issue 42, item 2): the start is
cancelled, not awaited. A start that never ended (a database address that never
answers, retried 2^31 times) held the rebalance that revoked it, and with it every later
one: the next connector stayed UNASSIGNED for good. The runtime here holds a task from
the moment its start begins, as the Spark runtime does, and some starts never end."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from herder.stores.config_records import RestartRequest
from protocol.messages import ConnectorTaskId
from tests.unit.herder.memory_cluster import (
    LoneCoordinator,
    RecordingRuntime,
    running_herder,
    until,
)

CONFIG = {"connector.class": "counting", "tasks.max": "1"}
STUCK = ConnectorTaskId("stuck", 0)
NEXT = ConnectorTaskId("next", 0)


@dataclass
class EndlessStarts(RecordingRuntime):
    """The starts of the `endless` connectors never end by themselves; the task is held
    from the moment its start begins. `cancelled` are the starts given up on."""

    endless: set[str] = field(default_factory=set)
    begun: list[ConnectorTaskId] = field(default_factory=list)
    cancelled: list[ConnectorTaskId] = field(default_factory=list)

    async def start_task(
        self,
        task_id: ConnectorTaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        generation: int,
    ) -> None:
        self.begun.append(task_id)
        if task_id.connector not in self.endless:
            await super().start_task(task_id, connector_config, task_config, generation)
            return
        self.running[task_id] = task_config
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(task_id)
            raise


async def test_a_delete_during_a_start_that_never_ends_lets_the_next_connector_run(
    tmp_path: Path,
) -> None:
    runtime = EndlessStarts(endless={"stuck"})
    async with running_herder(tmp_path, LoneCoordinator(), runtime=runtime) as (herder, _):
        await herder.admin.create_connector("stuck", CONFIG)
        await until(lambda: runtime.begun == [STUCK], "the endless start to begin")

        await herder.admin.delete_connector("stuck")
        await herder.admin.create_connector("next", CONFIG)

        await until(lambda: NEXT in runtime.running, "the next connector's task to run")
        assert runtime.cancelled == [STUCK]
        assert STUCK in runtime.stops and STUCK not in runtime.running
        status = herder.admin.task_status(NEXT)
        assert status is not None and status.state == "RUNNING"


async def test_a_revoked_restart_cancels_the_start_it_waits_for_too(tmp_path: Path) -> None:
    """A restart during a start waits for that start (`after`); a revocation cancels
    both, so neither outlives the task's ownership."""
    runtime = EndlessStarts(endless={"stuck"})
    async with running_herder(tmp_path, LoneCoordinator(), runtime=runtime) as (herder, _):
        await herder.admin.create_connector("stuck", CONFIG)
        await until(lambda: runtime.begun == [STUCK], "the endless start to begin")
        await herder.admin.restart(RestartRequest("stuck", task=0))
        await until(lambda: STUCK in runtime.stops, "the restart to stop the held task")

        await herder.admin.delete_connector("stuck")
        await herder.admin.create_connector("next", CONFIG)

        await until(lambda: NEXT in runtime.running, "the next connector's task to run")
        await until(lambda: runtime.cancelled == [STUCK], "the first start to be cancelled")
        assert runtime.begun.count(STUCK) == 1, "the restart never started the task again"
