"""Automatic restarts through the whole herder, against in-memory stores, a one-member
group and a runtime that fails the starts a test tells it to: what restarts, when, in
which order with the group loop, and what the status trace says."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path

from herder.herder import DistributedHerder
from herder.member.membership import HeartbeatOutcome
from herder.requests import RequestTimedOut, WorkerStopping
from herder.stores.config_records import RestartRequest, TargetState
from herder.stores.status_store import Status
from herder.tasks.auto_restart import RestartPolicy
from herder.tasks.restart_timer import RestartTimer
from protocol.messages import ConnectorTaskId
from tests.unit.herder.memory_cluster import (
    CountingPlugins,
    LoneCoordinator,
    RecordingRuntime,
    running_herder,
    until,
)
from worker.plugins.task_state import TaskState
from worker.runtime.spark_queries import TaskFencedError

CONFIG = {"connector.class": "counting", "tasks.max": "1"}
TASK = ConnectorTaskId("flaky", 0)
CAUSE = "java.io.IOException: Parent path is not a directory: /data/out"
FAST = RestartPolicy(enabled=True, max_attempts=3, initial_backoff_ms=20, max_backoff_ms=40)


def flaky_herder(
    tmp_path: Path,
    policy: RestartPolicy = FAST,
    coordinator: LoneCoordinator | None = None,
    plugins: CountingPlugins | None = None,
) -> AbstractAsyncContextManager[tuple[DistributedHerder, RecordingRuntime]]:
    return running_herder(tmp_path, coordinator, plugins=plugins, auto_restart=policy)


class FlakyPlugins(CountingPlugins):
    """Admits every config; a started connector fails while `broken` is set (as one
    whose placeholder cannot be resolved yet does)."""

    def __init__(self) -> None:
        self.broken = False

    def validate(self, config: Mapping[str, str]) -> None:
        if self.broken:
            raise ValueError("secret.path: the file provider cannot read /run/secrets/db")

    def admit(
        self,
        config: Mapping[str, str],
        others: Mapping[str, Mapping[str, str]],
        *,
        will_run: bool,
    ) -> None:
        return None


def state_of(status: Status | None) -> TaskState | None:
    return None if status is None else status.state


def trace_of(status: Status | None) -> str:
    return "" if status is None or status.trace is None else status.trace


def restarted_since(runtime: RecordingRuntime, starts: int) -> bool:
    return runtime.starts.count(TASK) > starts


def restart_scheduled(herder: DistributedHerder) -> bool:
    """Whether an automatic restart is scheduled, due or overdue: "nothing restarts any
    more" read where the herder decides it, rather than waited out with a sleep that a
    loaded machine stretches past the back-off."""
    return herder._work.restarts.next_due_in() is not None


def nothing_scheduled_after(herder: DistributedHerder, begun: int) -> Callable[[], bool]:
    """No restart scheduled and `begun` taken in all: none waits, none is in flight."""
    return lambda: not restart_scheduled(herder) and herder.metrics().auto_restarts == begun


def task_trace_has(herder: DistributedHerder, text: str) -> Callable[[], bool]:
    def has() -> bool:
        status = herder.admin.task_status(TASK)
        return state_of(status) is TaskState.FAILED and text in trace_of(status)

    return has


async def test_a_task_whose_cause_goes_away_runs_again_without_anyone_asking(
    tmp_path: Path,
) -> None:
    async with flaky_herder(tmp_path) as (herder, runtime):
        runtime.failing[TASK] = CAUSE
        await herder.admin.create_connector("flaky", CONFIG)
        await until(
            task_trace_has(herder, "Automatic restart 1 of 3 failed; automatic restart 2 of 3"),
            "a first automatic restart that failed too",
        )
        assert trace_of(herder.admin.task_status(TASK)).startswith(CAUSE + "\n")
        del runtime.failing[TASK]
        await until(
            lambda: state_of(herder.admin.task_status(TASK)) is TaskState.RUNNING, "RUNNING"
        )
        assert runtime.starts.count(TASK) >= 3 and runtime.stops.count(TASK) >= 2
        running = herder.admin.task_status(TASK)
        assert running is not None and (running.worker_id, running.trace) == ("me:8083", None)


async def test_after_the_last_attempt_the_task_stays_failed_until_a_manual_restart(
    tmp_path: Path,
) -> None:
    async with flaky_herder(tmp_path) as (herder, runtime):
        runtime.failing[TASK] = CAUSE
        await herder.admin.create_connector("flaky", CONFIG)
        exhausted = "Automatic restart 3 of 3 failed; the task stays FAILED until it is restarted"
        await until(task_trace_has(herder, exhausted), "the last attempt to fail")
        assert "POST /connectors/flaky/tasks/0/restart" in trace_of(herder.admin.task_status(TASK))
        await until(nothing_scheduled_after(herder, 3), "no restart after the last attempt")
        assert runtime.starts.count(TASK) == 1 + 3

        await herder.admin.restart(RestartRequest("flaky", task=0))
        # Until the manual restart's run fails, the status still shows the old trace.
        attempts = 2 * (1 + 3)
        await until(lambda: runtime.starts.count(TASK) == attempts, "three more, counted from 0")
        await until(task_trace_has(herder, exhausted), "the last of them to fail")
        assert runtime.starts.count(TASK) == attempts


async def test_a_task_that_fails_while_running_is_restarted_and_a_long_run_resets_the_count(
    tmp_path: Path,
) -> None:
    async with flaky_herder(tmp_path) as (herder, runtime):
        await herder.admin.create_connector("flaky", CONFIG)
        await until(
            lambda: state_of(herder.admin.task_status(TASK)) is TaskState.RUNNING, "RUNNING"
        )
        for _ in range(FAST.max_attempts + 1):
            starts = runtime.starts.count(TASK)
            # Part of the scenario, not a wait: a run longer than the longest back-off.
            await asyncio.sleep(FAST.max_backoff_ms / 1000 * 2)
            runtime.fail(TASK, "org.apache.spark.SparkException: Job aborted")
            await until(partial(restarted_since, runtime, starts), "an automatic restart")
            await until(
                lambda: state_of(herder.admin.task_status(TASK)) is TaskState.RUNNING,
                "RUNNING again",
            )


async def test_a_fenced_task_is_left_to_the_worker_that_claimed_it(tmp_path: Path) -> None:
    async with flaky_herder(tmp_path) as (herder, runtime):
        runtime.failing[TASK] = str(TaskFencedError(TASK, "other:8083 (generation 9)"))
        await herder.admin.create_connector("flaky", CONFIG)
        await until(
            task_trace_has(herder, "Not restarted automatically: another worker has claimed"),
            "the fenced failure",
        )
        await until(nothing_scheduled_after(herder, 0), "no restart of a fenced task")
        assert runtime.starts.count(TASK) == 1


async def test_a_connectors_own_keys_override_the_workers(tmp_path: Path) -> None:
    async with flaky_herder(tmp_path) as (herder, runtime):
        runtime.failing[TASK] = CAUSE
        await herder.admin.create_connector("flaky", {**CONFIG, "auto.restart.enabled": "false"})
        await until(lambda: state_of(herder.admin.task_status(TASK)) is TaskState.FAILED, "FAILED")
        await until(nothing_scheduled_after(herder, 0), "no restart of a task that opted out")
        assert runtime.starts.count(TASK) == 1 and trace_of(herder.admin.task_status(TASK)) == CAUSE

    async with flaky_herder(tmp_path, RestartPolicy(enabled=False)) as (herder, runtime):
        runtime.failing[TASK] = CAUSE
        config = {**CONFIG, "auto.restart.enabled": "true", "auto.restart.max.attempts": "1"}
        config |= {"auto.restart.initial.backoff.ms": "100", "auto.restart.max.backoff.ms": "100"}
        await herder.admin.create_connector("flaky", config)
        await until(task_trace_has(herder, "Automatic restart 1 of 1 failed"), "one attempt")
        assert runtime.starts.count(TASK) == 2


async def test_a_due_restart_waits_for_the_rebalance_in_progress(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    slow = RestartPolicy(enabled=True, max_attempts=3, initial_backoff_ms=200, max_backoff_ms=200)
    async with flaky_herder(tmp_path, slow, coordinator) as (herder, runtime):
        runtime.failing[TASK] = CAUSE
        await herder.admin.create_connector("flaky", CONFIG)
        await until(lambda: state_of(herder.admin.task_status(TASK)) is TaskState.FAILED, "FAILED")
        del runtime.failing[TASK]
        generation = coordinator.generation
        coordinator.joinable.clear()
        coordinator.heartbeats.append(HeartbeatOutcome.REJOIN)
        # The restart comes due while the loop rejoins, and waits for it.
        await until(
            lambda: herder._work.restarts.next_due_in() == 0.0 or runtime.starts.count(TASK) > 1,
            "the restart to come due during the rejoin",
        )
        assert runtime.starts.count(TASK) == 1, "restarted beside the group loop"
        coordinator.joinable.set()
        await until(lambda: runtime.starts.count(TASK) == 2, "the restart after the rejoin")
        assert coordinator.generation > generation
        await until(
            lambda: state_of(herder.admin.task_status(TASK)) is TaskState.RUNNING, "RUNNING"
        )


async def test_work_paused_or_deleted_before_its_restart_is_not_restarted(
    tmp_path: Path,
) -> None:
    slow = RestartPolicy(enabled=True, max_attempts=3, initial_backoff_ms=300, max_backoff_ms=300)
    async with flaky_herder(tmp_path, slow) as (herder, runtime):
        runtime.failing[TASK] = CAUSE
        await herder.admin.create_connector("flaky", CONFIG)
        await until(lambda: state_of(herder.admin.task_status(TASK)) is TaskState.FAILED, "FAILED")
        await herder.admin.set_target_state("flaky", TargetState.PAUSED)
        await until(lambda: state_of(herder.admin.task_status(TASK)) is TaskState.PAUSED, "PAUSED")
        await until(nothing_scheduled_after(herder, 0), "no restart of a paused task")
        assert runtime.starts.count(TASK) == 1

        await herder.admin.set_target_state("flaky", TargetState.STARTED)
        await until(lambda: runtime.starts.count(TASK) == 2, "resumed, and failing again")
        await until(lambda: state_of(herder.admin.task_status(TASK)) is TaskState.FAILED, "FAILED")
        await herder.admin.delete_connector("flaky")
        await until(lambda: herder.owned.is_empty(), "deleted work given up")
        await until(nothing_scheduled_after(herder, 0), "no restart of deleted work")
        assert runtime.starts.count(TASK) == 2 and not runtime.running


async def test_a_connector_that_fails_to_start_is_restarted_too(tmp_path: Path) -> None:
    plugins = FlakyPlugins()
    async with flaky_herder(tmp_path, plugins=plugins) as (herder, _):
        plugins.broken = True
        await herder.admin.create_connector("flaky", CONFIG)

        def connector_trace_has(text: str) -> Callable[[], bool]:
            return lambda: text in trace_of(herder.admin.connector_status("flaky"))

        await until(
            connector_trace_has("Automatic restart 1 of 3 failed; automatic restart 2 of 3"),
            "a failed automatic restart of the connector",
        )
        assert trace_of(herder.admin.connector_status("flaky")).startswith("secret.path: ")
        plugins.broken = False
        await until(
            lambda: state_of(herder.admin.connector_status("flaky")) is TaskState.RUNNING,
            "the connector RUNNING",
        )


async def test_restarts_the_loop_could_not_serve_in_time_are_queued_again() -> None:
    submitted: list[str] = []
    ran = asyncio.Event()

    async def submit(request: Callable[[], Awaitable[None]]) -> None:
        submitted.append("queued")
        if len(submitted) == 1:
            raise RequestTimedOut(0.1)
        if len(submitted) == 2:
            await request()
            return
        raise WorkerStopping()

    async def run_due() -> None:
        ran.set()

    timer = RestartTimer(submit, run_due)
    timer.arm(0.0)
    await until(ran.is_set, "the restarts to run once queued again")
    assert submitted == ["queued", "queued"]
    timer.arm(0.0)
    await until(lambda: len(submitted) == 3, "a third wake-up")
    await timer.close()
    timer.arm(0.0)
    # Part of the scenario, not a wait: a closed timer never fires.
    await asyncio.sleep(0.05)
    assert len(submitted) == 3
