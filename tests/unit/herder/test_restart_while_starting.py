"""A task restarted while its start is still under way (a Spark query's start takes
seconds under load) restarts once that start ends: the request is not dropped. A REST
restart answers as soon as it is durable, so it often arrives before the start it follows
has ended; a dropped one left a task running on a file or link the user had changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from herder.herder import DistributedHerder
from herder.stores.config_records import RestartRequest, TargetState
from protocol.messages import ConnectorTaskId
from tests.unit.herder.memory_cluster import LoneCoordinator, running_herder, until
from tests.unit.herder.test_request_lane import CONFIG, HeldStarts

TASK = ConnectorTaskId("held", 0)


def shows(herder: DistributedHerder, item: str | ConnectorTaskId, state: str) -> Callable[[], bool]:
    """Whether the status the herder serves for the connector or task is `state`."""

    def reads() -> bool:
        if isinstance(item, ConnectorTaskId):
            status = herder.admin.task_status(item)
        else:
            status = herder.admin.connector_status(item)
        return status is not None and status.state == state

    return reads


async def test_a_restart_during_a_start_starts_the_task_again_after_it(tmp_path: Path) -> None:
    runtime = HeldStarts()
    async with running_herder(tmp_path, LoneCoordinator(), runtime=runtime) as (herder, _):
        await herder.admin.create_connector("held", CONFIG)
        await until(lambda: runtime.begun == [TASK], "the task's first start")

        await herder.admin.restart(RestartRequest("held", task=0))
        runtime.launch.set()

        await until(lambda: runtime.begun == [TASK, TASK], "the restart's start after it")
        await until(lambda: TASK in runtime.running, "the task to run")
        status = herder.admin.task_status(TASK)
        assert status is not None and status.state == "RUNNING"


async def test_a_pause_during_a_start_stops_the_task_once_started(tmp_path: Path) -> None:
    """The same for a change of target state (or of task config) that arrives during the
    start: the task is brought in line once the start ends, not left running paused."""
    runtime = HeldStarts()
    async with running_herder(tmp_path, LoneCoordinator(), runtime=runtime) as (herder, _):
        await herder.admin.create_connector("held", CONFIG)
        await until(lambda: runtime.begun == [TASK], "the task's first start")

        await herder.admin.set_target_state("held", TargetState.PAUSED)
        runtime.launch.set()

        await until(lambda: TASK in runtime.stops, "the started task to stop")
        assert TASK not in runtime.running
        status = herder.admin.task_status(TASK)
        assert status is not None and status.state == "PAUSED"


async def test_a_pause_and_a_resume_during_one_start_leave_the_task_running(
    tmp_path: Path,
) -> None:
    """The resume must not be lost behind the pause's stop: the task ends RUNNING under a
    STARTED connector (it stayed PAUSED, the resume taken for the start under way)."""
    runtime = HeldStarts()
    async with running_herder(tmp_path, LoneCoordinator(), runtime=runtime) as (herder, _):
        await herder.admin.create_connector("held", CONFIG)
        await until(lambda: runtime.begun == [TASK], "the task's first start")

        await herder.admin.set_target_state("held", TargetState.PAUSED)
        await until(shows(herder, "held", "PAUSED"), "the connector PAUSED")
        await herder.admin.set_target_state("held", TargetState.STARTED)
        await until(shows(herder, "held", "RUNNING"), "the connector RUNNING")
        runtime.launch.set()

        await until(lambda: TASK in runtime.running, "the task to run after the start")
        await until(shows(herder, TASK, "RUNNING"), "the task RUNNING")
        assert runtime.begun[-1] == TASK and TASK in runtime.running
