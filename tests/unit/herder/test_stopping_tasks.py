"""A STOPPED connector's tasks stop at the rebalance the stop needs, and until then they
still run: its status shows them, and its offsets stay closed (409). The status used to
list a STOPPED connector's tasks from its task configs alone (none), so a caller that
waited for "STOPPED with no task" and then altered the offsets was refused: "task(s) [0]
still report RUNNING" (a flaky REST differential under load)."""

from __future__ import annotations

from pathlib import Path

import pytest

from herder.errors import TasksStillRunning
from herder.stores.config_records import TargetState
from protocol.messages import ConnectorTaskId
from tests.unit.herder.memory_cluster import (
    LoneCoordinator,
    RecordingRuntime,
    running_herder,
    until,
)

CONFIG = {"connector.class": "counting", "tasks.max": "1"}
TASK = ConnectorTaskId("stopped", 0)


async def test_a_stopped_connectors_task_is_shown_until_it_has_stopped(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    runtime = RecordingRuntime()
    async with running_herder(tmp_path, coordinator, runtime=runtime) as (herder, _):
        await herder.admin.create_connector("stopped", CONFIG)
        await until(lambda: TASK in runtime.running, "the task to run")
        coordinator.joinable.clear()  # the rebalance the stop needs does not come yet

        await herder.admin.set_target_state("stopped", TargetState.STOPPED)
        assert not herder.admin.connector("stopped").tasks
        assert list(herder.admin.stopping_tasks("stopped")) == [TASK]
        with pytest.raises(TasksStillRunning):
            await herder.admin.alter_connector_offsets("stopped", {0: {0: {"offset": 1}}})

        coordinator.joinable.set()
        await until(lambda: not herder.admin.stopping_tasks("stopped"), "the task to stop")
        assert TASK not in runtime.running
        await herder.admin.alter_connector_offsets("stopped", {0: {0: {"offset": 1}}})
