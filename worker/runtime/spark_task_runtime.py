"""Starts, stops and watches connector tasks as Spark streaming queries on one session.

The herder calls this from its event loop, which must keep heartbeating to the group
coordinator, so every Spark call (all blocking py4j calls) runs in a worker thread and
this module's coroutines only ever await. A task that fails, at start or later while it
runs, is reported FAILED with its trace and affects no other task.

Every start claims the task's checkpoint first (`worker.plugins.task_claims`); a query whose
claim another worker has since overtaken is stopped and reported FAILED as fenced, so a
worker that lost its membership without noticing stops competing for the task within
one monitor interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Final

from protocol.messages import ConnectorTaskId
from worker.admission.connector_configs import RegistryPlugins
from worker.plugins.api import Connector
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.start_deadline import (
    START_TIMEOUT_KEY,
    START_TIMEOUT_MS_DEFAULT,
    StartCancelledError,
    StartDeadline,
)
from worker.plugins.task_claims import is_released
from worker.plugins.task_state import StartupCounts, StateListener, TaskState, TaskStatus
from worker.records.errors.task_errors import BatchErrors
from worker.runtime import spark_warm_up
from worker.runtime.connector_offsets import CheckpointOffsets
from worker.runtime.daemon_thread import DaemonThread
from worker.runtime.log_setup import working_on
from worker.runtime.spark_queries import (
    Launched,
    describe_failure,
    ended_queries,
    fenced_launches,
    stop_and_release,
)
from worker.runtime.spark_session import SparkSessionProvider
from worker.runtime.task_launch import TaskLauncher
from worker.runtime.task_looks import TaskLooks
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import TriggerLag

MONITOR_INTERVAL_S: Final = 1.0
RELEASE_POLL_S: Final = 0.05
MONITOR_DRAIN_S: Final = 5.0
STOPPED_WHILE_STARTING: Final = "The task was stopped while it started; its start was cancelled"

log = logging.getLogger(__name__)


@dataclass
class _TaskRun:
    """One start of one task: its status, and the launch that yields its query."""

    status: TaskStatus
    launch: asyncio.Future[Launched]
    configs: tuple[Mapping[str, str], ...]
    """The connector's and the task's configs as stored: the secrets their placeholders
    resolve to are hidden from the task's trace."""
    deadline: StartDeadline
    stopping: bool = False
    halt: asyncio.Task[None] | None = None
    """Stopping whatever query the launch yields and releasing its claim, once begun: by
    a stop, or by the start's deadline (a launch given up on is stopped as it returns)."""


class SparkTaskRuntime(CheckpointOffsets):
    """The worker's connector tasks, each one streaming query on the shared session: what
    the herder drives through its `herder.runtime.TaskRuntime` seam (the offsets
    operations of that seam are `CheckpointOffsets`').

    The runtime is where a held task's status lives (`task_status`): only it sees a query
    start, fail or die. `on_state_change` is called on the event loop with each new status
    (RUNNING, FAILED, or UNASSIGNED once stopped and forgotten); the herder publishes it
    as given.
    """

    def __init__(
        self,
        session: SparkSessionProvider,
        plugins: RegistryPlugins,
        checkpoint_root: Path,
        worker_id: str,
        shutdown_timeout_ms: int,
        on_state_change: StateListener,
        clock: Callable[[], float] = time.time,
        monitor_interval_s: float = MONITOR_INTERVAL_S,
        topic_creation_enabled: bool = True,
        start_timeout_ms: int = START_TIMEOUT_MS_DEFAULT,
        own_topic: spark_warm_up.OwnTopic | None = None,
        warm_up_plugins: Sequence[type[Connector]] = (),
    ) -> None:
        """`topic_creation_enabled` is the worker's `topic.creation.enable`, handed to
        every task it starts (`TaskContext.topic_creation_enabled`); `start_timeout_ms`
        its `task.start.timeout.ms`, each start's deadline (`TaskContext.deadline`);
        `own_topic` the topic the warm-up reads through Spark's Kafka connector,
        `warm_up_plugins` the plugins whose writes it runs (`Connector.warm_up`)."""
        super().__init__(checkpoint_root)
        self._launcher = TaskLauncher(
            session, plugins, checkpoint_root, worker_id, topic_creation_enabled
        )
        self._session = session
        self._plugins = plugins
        self._own_topic = own_topic
        self._warm_up_plugins = tuple(warm_up_plugins)
        self._checkpoint_root = checkpoint_root
        self._shutdown_timeout_s = shutdown_timeout_ms / 1000
        self._start_timeout_s = start_timeout_ms / 1000
        self._start_timeout_named = f"{START_TIMEOUT_KEY} ({start_timeout_ms} ms)"
        self._on_state_change = on_state_change
        self._clock = clock
        self._monitor_interval_s = monitor_interval_s
        self._runs: dict[ConnectorTaskId, _TaskRun] = {}
        self._monitor: asyncio.Task[None] | None = None
        self._monitor_wake = asyncio.Event()
        """Set by `stop_all`: the monitor's next look is its last."""
        self._monitor_thread = DaemonThread("task-monitor")
        self._looks = TaskLooks(self._monitor_thread, checkpoint_root, clock)
        self._halts: set[asyncio.Task[None]] = set()
        self.startups = StartupCounts()
        self.fenced = 0
        """Queries stopped because another worker claimed their task."""

    def running(self) -> set[ConnectorTaskId]:
        return {t for t, run in self._runs.items() if run.status.state is TaskState.RUNNING}

    def held(self) -> set[ConnectorTaskId]:
        """Every task this runtime holds, FAILED ones included: a failed task stays held
        (its status and trace stay readable) until it is stopped, and only then can it
        start again."""
        return set(self._runs)

    async def lost_to_others(self) -> set[ConnectorTaskId]:
        """Asks the claims themselves, not the monitor: a worker just thawed from a freeze
        asks this before its monitor has looked again."""
        launches = {t: run.launch for t, run in self._runs.items() if run.launch.done()}
        return await asyncio.to_thread(fenced_launches, launches)

    async def warm_up(self) -> None:
        """Start the session and run a small job, a one-batch streaming query, a read of
        the worker's own topic and each plugin's writes on it (`spark_warm_up`), so the
        first task's query pays neither for Spark's start-up (seconds, tens of them on a
        busy machine) nor for a cold streaming engine, Kafka connector or table format."""
        session = await asyncio.to_thread(self._session.get)
        formats = [plugin.warm_up for plugin in self._warm_up_plugins]
        batch = await asyncio.to_thread(spark_warm_up.warm_up, session, self._own_topic, formats)
        log.debug("warm-up streaming batch: %s ms", batch.get("batchDuration"))

    def progress(self) -> dict[ConnectorTaskId, TaskProgress]:
        """The running tasks' progress, as of the last look (once a second)."""
        return self._looks.progress(self._runs)

    def errors(self) -> dict[ConnectorTaskId, BatchErrors]:
        """The running tasks' error totals over every batch their checkpoints committed,
        as of the last look (once a second)."""
        return self._looks.errors(self._runs)

    def trigger_lags(self) -> dict[ConnectorTaskId, TriggerLag]:
        """How far each running task is behind its trigger now (`worker.runtime.trigger_lag`)."""
        return self._looks.trigger_lags(self.running())

    def task_status(self, task_id: ConnectorTaskId) -> TaskStatus | None:
        run = self._runs.get(task_id)
        return run.status if run is not None else None

    async def start_task(
        self,
        task_id: ConnectorTaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        generation: int,
    ) -> None:
        """Start the task's query; returns once it is RUNNING or FAILED, never raises.
        A start that takes longer than `task.start.timeout.ms` is given up and the task
        FAILED at once: the thread it runs on cannot be stopped, but it learns it
        (`TaskContext.deadline`), and whatever query it still yields is stopped.

        `generation` is the group generation the task was assigned in; its claim records
        it so that a fenced worker learns who took the task over.

        A task this runtime already holds, in whatever state, is left alone: restarting
        it is `stop_task` then `start_task`.
        """
        if task_id in self._runs:
            log.warning("Task %s is already held by this worker; not starting it again", task_id)
            return
        with working_on(task_id):
            await self._start(task_id, connector_config, task_config, generation)

    async def _start(
        self,
        task_id: ConnectorTaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        generation: int,
    ) -> None:
        deadline = StartDeadline(self._start_timeout_s, self._start_timeout_named)
        launch = asyncio.create_task(
            asyncio.to_thread(
                self._launcher.launch,
                task_id,
                dict(connector_config),
                dict(task_config),
                generation,
                deadline,
            )
        )
        configs = (connector_config, task_config)
        run = _TaskRun(TaskStatus(TaskState.UNASSIGNED), launch, configs, deadline)
        self._runs[task_id] = run
        self._looks.forget(task_id)
        self.startups.attempts += 1
        done, _ = await asyncio.wait({launch}, timeout=deadline.remaining())
        if not done:
            deadline.cancel(deadline.why)
            self._halting(task_id, run)
        error = launch.exception() if done else StartCancelledError(deadline.why)
        if error is not None:
            self.startups.failures += 1
            if self._runs.get(task_id) is run:
                self._change(task_id, run, TaskStatus(TaskState.FAILED, describe_failure(error)))
            return
        self.startups.successes += 1
        log.info("Task %s is running", task_id)
        if self._runs.get(task_id) is run:
            started_at = datetime.fromtimestamp(self._clock(), UTC).isoformat(
                timespec="milliseconds"
            )
            self._change(task_id, run, TaskStatus(TaskState.RUNNING, started_at=started_at))
            self._ensure_monitor()

    async def await_release(self, task_id: ConnectorTaskId) -> bool:
        """Until the task's newest claim is released (`worker.plugins.task_claims`): its previous
        owner gives it up in this same round and releases it once its query has stopped.
        At most twice `task.shutdown.graceful.timeout.ms`, the bound of that owner's stop
        plus as much again for its news of the round (a crashed owner never releases)."""
        directory = checkpoint_dir_for(self._checkpoint_root, task_id.connector, task_id.task)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 2 * self._shutdown_timeout_s
        while not await asyncio.to_thread(is_released, directory):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(RELEASE_POLL_S)
        return True

    async def stop_task(self, task_id: ConnectorTaskId) -> None:
        """Stop the task's query and forget the task; reports it UNASSIGNED.

        Waits at most `shutdown_timeout_ms` (a start still in flight is cancelled, through
        its `TaskContext.deadline`, and waited for within the same bound; the query it
        still yields is stopped), half of it for a batch in flight to finish. A query
        that takes longer keeps stopping in the background: the herder must not hang on
        one task, and should the task's next owner start before this query ends, Spark's
        checkpoint and file-sink logs let only one of the two commit each batch, so the
        output still has no duplicate; the loser fails instead (as does a restart on this
        worker before the old query ends: Spark refuses two active queries on one
        checkpoint).
        """
        run = self._runs.pop(task_id, None)
        if run is None:
            return
        run.stopping = True
        run.deadline.cancel(STOPPED_WHILE_STARTING)
        try:
            await asyncio.wait_for(
                asyncio.shield(self._halting(task_id, run)), self._shutdown_timeout_s
            )
        except TimeoutError:
            log.warning(
                "Task %s did not stop within %.0f ms; it keeps stopping in the background",
                task_id,
                self._shutdown_timeout_s * 1000,
            )
        log.info("Task %s stopped", task_id)
        self._notify(task_id, TaskStatus(TaskState.UNASSIGNED))

    def _halting(self, task_id: ConnectorTaskId, run: _TaskRun) -> asyncio.Task[None]:
        """The run's halt, begun now unless it was already."""
        if run.halt is None:
            with working_on(task_id):
                run.halt = asyncio.create_task(self._halt(task_id, run))
            self._halts.add(run.halt)
            run.halt.add_done_callback(self._halts.discard)
        return run.halt

    async def _halt(self, task_id: ConnectorTaskId, run: _TaskRun) -> None:
        try:
            launched = await run.launch
        except Exception:
            return
        try:
            await asyncio.to_thread(stop_and_release, launched, self._shutdown_timeout_s / 2)
        except Exception:
            log.exception("Stopping the query of task %s failed", task_id)

    async def stop_all(self) -> None:
        """Stops every task, then lets the monitor finish the look it may be taking, for
        `MONITOR_DRAIN_S` at most.

        A look still in a py4j call when the worker then stops Spark answered only 30-45 s
        later. The look runs on a daemon thread (`worker.runtime.daemon_thread`), so a look that
        does not answer in time is left behind without holding the process's exit."""
        await asyncio.gather(*(self.stop_task(task_id) for task_id in list(self._runs)))
        monitor = self._monitor
        if monitor is not None:
            self._monitor_wake.set()
            await asyncio.wait({monitor}, timeout=MONITOR_DRAIN_S)
            if not monitor.done():
                log.warning(
                    "the task monitor's last look at Spark did not answer within %.0f s; "
                    "leaving it behind",
                    MONITOR_DRAIN_S,
                )
                monitor.cancel()
                await asyncio.wait({monitor})
            self._monitor_wake.clear()

    def _ensure_monitor(self) -> None:
        if self._monitor is None:
            self._monitor = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        """Marks FAILED the tasks whose query died or was fenced; ends when nothing is
        RUNNING."""
        try:
            while self.running():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._monitor_wake.wait(), self._monitor_interval_s)
                if not self.running():
                    return
                watched = {
                    t: run for t, run in self._runs.items() if run.status.state is TaskState.RUNNING
                }
                launches = {t: run.launch.result() for t, run in watched.items()}
                try:
                    dead = await self._monitor_thread.call(
                        partial(ended_queries, launches, self._watched)
                    )
                except Exception:
                    log.exception("Could not check the tasks' Spark queries; will retry")
                    continue
                await self._looks.look(
                    {t: launched for t, launched in launches.items() if t not in dead},
                    self._watched,
                )
                for task_id, (trace, fenced) in dead.items():
                    run = watched[task_id]
                    self.fenced += fenced
                    if self._runs.get(task_id) is run and not run.stopping:
                        self._change(
                            task_id, run, replace(run.status, state=TaskState.FAILED, trace=trace)
                        )
        finally:
            if self._monitor is asyncio.current_task():
                self._monitor = None

    def _watched(self, task_id: ConnectorTaskId) -> bool:
        """Whether the monitor should look at the task's query: held and not stopping.
        Called from the monitor's thread; a dict look-up is atomic."""
        run = self._runs.get(task_id)
        return run is not None and not run.stopping

    def _change(self, task_id: ConnectorTaskId, run: _TaskRun, status: TaskStatus) -> None:
        """A trace is published (status topic, REST, `/ui`) and logged: never a secret."""
        if status.trace is not None:
            status = replace(status, trace=self._plugins.hide(status.trace, *run.configs))
        run.status = status
        if status.state is TaskState.FAILED:
            log.error("Task %s failed:\n%s", task_id, status.trace)
        self._notify(task_id, status)

    def _notify(self, task_id: ConnectorTaskId, status: TaskStatus) -> None:
        """A listener's bug must not take the runtime's bookkeeping down with it."""
        try:
            self._on_state_change(task_id, status)
        except Exception:
            log.exception("State listener failed for task %s -> %s", task_id, status.state)
