"""Every task start has a deadline (issue 42, item 2): `task.start.timeout.ms`, which a
stop of the task during its start brings forward to now. The start's thread cannot be
killed, so it is told (`TaskContext.deadline`); whatever query a start given up on still
yields is stopped and its claim released at once, and the task never turns RUNNING.

The runtime runs here without Spark: a plugin's start is what the test makes it, the
session a stand-in that only tags jobs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from py4j.protocol import Py4JError
from pydantic import BaseModel

from protocol.messages import ConnectorTaskId
from tests.support.plugins import plugins_for
from tests.support.polling import wait_until_async
from worker.admission.registry import PluginRegistry
from worker.plugins.api import Connector, Task, TaskContext
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.start_deadline import StartCancelledError, StartDeadline
from worker.plugins.task_claims import is_released
from worker.plugins.task_state import TaskState, TaskStatus
from worker.runtime.spark_task_runtime import STOPPED_WHILE_STARTING, SparkTaskRuntime

TASK = ConnectorTaskId("slow", 0)
CONFIG = {"name": "slow", "connector.class": "slow-start", "tasks.max": "1"}


class StandInQuery:
    """What a started query looks like to the runtime's stop."""

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self.status = {"isTriggerActive": False}
        self._jsq = self

    @property
    def isActive(self) -> bool:
        return not self.stopped.is_set()

    def stop(self) -> None:
        self.stopped.set()

    def streamingQuery(self) -> Any:
        raise Py4JError("no JVM here")


class NoSettings(BaseModel):
    pass


class SlowStart:
    """How the plugin's start behaves; the test sets it."""

    began = threading.Event()
    release = threading.Event()
    honours_deadline = True
    seen: ClassVar[list[StartDeadline]] = []
    query = StandInQuery()

    @classmethod
    def reset(cls, honours_deadline: bool) -> None:
        cls.began, cls.release, cls.seen = threading.Event(), threading.Event(), []
        cls.honours_deadline, cls.query = honours_deadline, StandInQuery()


class SlowStartTask(Task):
    def start(self, spark: Any, context: TaskContext) -> Any:
        SlowStart.seen.append(context.deadline)
        SlowStart.began.set()
        if SlowStart.honours_deadline:
            context.deadline.wait(3600)
            context.deadline.check()
        else:
            SlowStart.release.wait(60)
        return SlowStart.query


class SlowStartConnector(Connector):
    name: ClassVar[str] = "slow-start"
    config_model: ClassVar[type[BaseModel]] = NoSettings
    connector_type = "source"

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return [dict(config)]

    def create_task(self) -> Task:
        return SlowStartTask()


class StandInSession:
    """Tags jobs, as the launch asks of Spark's context, and nothing else."""

    def __init__(self) -> None:
        self.sparkContext = self

    def get(self) -> StandInSession:
        return self

    def addJobTag(self, tag: str) -> None:
        pass

    def clearJobTags(self) -> None:
        pass


def runtime_for(
    tmp_path: Path, statuses: list[TaskStatus], start_timeout_ms: int
) -> SparkTaskRuntime:
    return SparkTaskRuntime(
        session=StandInSession(),  # type: ignore[arg-type]
        plugins=plugins_for(PluginRegistry([SlowStartConnector]), tmp_path),
        checkpoint_root=tmp_path,
        worker_id="me:8083",
        shutdown_timeout_ms=5_000,
        on_state_change=lambda task, status: statuses.append(status),
        start_timeout_ms=start_timeout_ms,
    )


@pytest.mark.parametrize("honours_deadline", [True, False], ids=["honours", "ignores"])
async def test_a_start_past_its_deadline_fails_naming_the_setting(
    tmp_path: Path, honours_deadline: bool
) -> None:
    """Whether or not the start heeds its deadline, the task is FAILED once it passes, and
    a query that comes later is stopped and its claim released."""
    SlowStart.reset(honours_deadline)
    statuses: list[TaskStatus] = []
    runtime = runtime_for(tmp_path, statuses, start_timeout_ms=300)

    await runtime.start_task(TASK, CONFIG, CONFIG, generation=1)

    status = runtime.task_status(TASK)
    assert status is not None and status.state is TaskState.FAILED
    assert status.trace is not None
    assert "task.start.timeout.ms (300 ms)" in status.trace and "cancelled" in status.trace
    assert SlowStart.seen[0].over
    SlowStart.release.set()
    checkpoint = checkpoint_dir_for(tmp_path, TASK.connector, TASK.task)
    await wait_until_async(lambda: is_released(checkpoint), 10, what="the claim's release")
    if not honours_deadline:
        assert SlowStart.query.stopped.is_set(), "the late query was stopped"
    assert [s.state for s in statuses] == [TaskState.FAILED]


async def test_a_stop_during_a_start_cancels_it_at_once(tmp_path: Path) -> None:
    SlowStart.reset(honours_deadline=True)
    statuses: list[TaskStatus] = []
    runtime = runtime_for(tmp_path, statuses, start_timeout_ms=600_000)
    start = asyncio.create_task(runtime.start_task(TASK, CONFIG, CONFIG, generation=1))
    await wait_until_async(SlowStart.began.is_set, 10, what="the start to begin")

    await runtime.stop_task(TASK)

    await asyncio.wait_for(start, 10)
    deadline = SlowStart.seen[0]
    assert deadline.over and deadline.why == STOPPED_WHILE_STARTING
    with pytest.raises(StartCancelledError, match="stopped while it started"):
        deadline.check()
    assert runtime.held() == set()
    assert [s.state for s in statuses] == [TaskState.UNASSIGNED]
    checkpoint = checkpoint_dir_for(tmp_path, TASK.connector, TASK.task)
    await wait_until_async(lambda: is_released(checkpoint), 10, what="the claim's release")


def test_a_deadline_waits_no_longer_than_it_has() -> None:
    clock = [0.0]
    deadline = StartDeadline(5.0, "task.start.timeout.ms (5000 ms)", clock=lambda: clock[0])
    assert deadline.remaining() == 5.0 and not deadline.over
    clock[0] = 5.0
    assert deadline.over and deadline.remaining() == 0.0
    assert deadline.wait(3600), "a wait past the deadline returns at once"
    with pytest.raises(StartCancelledError, match=r"ran past task.start.timeout.ms \(5000 ms\)"):
        deadline.check()
    unbounded = StartDeadline()
    unbounded.cancel("stopped")
    unbounded.cancel("a later reason")
    assert unbounded.wait(3600) and unbounded.why == "stopped"
