"""A worker's tasks as their machine (`herder.tasks.task_machine`) says: one record per task,
events fed in batches, commands carried out on the runtime.

`herder.tasks.work.LocalWork` owns a `TaskWork` and tells it what happened (an assignment, a
revocation, a config read, a restart due, a task's failure); this module keeps each task's
phase, the task config its newest start read and the start under way, and does what the
machine says: starts in the background (at most `STARTS_AT_ONCE` at once), stops awaited,
statuses through the `report` it was given.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field

from herder.runtime import TaskRuntime
from herder.stores.config_records import ConfigSnapshot, TargetState
from herder.stores.config_store import ConfigStore
from herder.tasks.task_machine import IllegalTaskEvent, TaskCommand, TaskEvent, TaskPhase, step
from protocol.messages import ConnectorTaskId
from worker.plugins.task_state import TaskState

log = logging.getLogger(__name__)

STARTS_AT_ONCE = 4
"""Task starts (Spark query launches) under way at once. Each holds a thread of the event
loop's default executor (6 on 2 cores) for seconds; unbounded, a round that assigned many
tasks took every thread, and the herder's blocking calls (a write's config checks, its
task configs) waited behind them. At 2, the fleet bench's 40 restarts took 100 s, not 36."""

SHOWN = {
    TaskCommand.SHOW_PAUSED: TaskState.PAUSED,
    TaskCommand.SHOW_RESTARTING: TaskState.RESTARTING,
    TaskCommand.SHOW_UNASSIGNED: TaskState.UNASSIGNED,
}
PAUSING = (TaskPhase.PAUSED, TaskPhase.PAUSE_PENDING)
NOT_STARTED = (TaskPhase.NEW, TaskPhase.AWAITING_RELEASE)

Fed = tuple[ConnectorTaskId, TaskEvent]


@dataclass
class _OwnedTask:
    """One task this worker owns: its phase, the task config its newest start read, and
    that start (or the wait for its release) while under way, which a revocation cancels."""

    phase: TaskPhase = TaskPhase.NEW
    config: Mapping[str, str] | None = None
    start: asyncio.Task[None] | None = None


@dataclass
class _Batch:
    """What a batch of events left to await: the starts to cancel, then the stops, then
    the commands that follow each stop."""

    cancels: list[asyncio.Task[None]] = field(default_factory=list)
    stops: list[ConnectorTaskId] = field(default_factory=list)
    aborts: list[ConnectorTaskId] = field(default_factory=list)
    after_stops: list[tuple[ConnectorTaskId, _OwnedTask, tuple[TaskCommand, ...]]] = field(
        default_factory=list
    )


class TaskWork:
    """The tasks this worker owns, each one record (`_OwnedTask`); `report` publishes a
    status the machine decides (PAUSED, RESTARTING, UNASSIGNED), `forget_restarts` counts a
    task's automatic restarts from zero, `give_up` asks the group loop to rejoin at once."""

    def __init__(
        self,
        runtime: TaskRuntime,
        configs: ConfigStore,
        generation: Callable[[], int],
        *,
        report: Callable[[ConnectorTaskId, TaskState], None],
        forget_restarts: Callable[[ConnectorTaskId], None],
        give_up: Callable[[], None],
    ) -> None:
        self._runtime = runtime
        self._configs = configs
        self._generation = generation
        self._report = report
        self._forget_restarts = forget_restarts
        self._give_up = give_up
        self._tasks: dict[ConnectorTaskId, _OwnedTask] = {}
        self._launching = asyncio.Semaphore(STARTS_AT_ONCE)
        self._background: set[asyncio.Task[None]] = set()

    def owned(self) -> frozenset[ConnectorTaskId]:
        return frozenset(self._tasks)

    def not_started(self) -> frozenset[ConnectorTaskId]:
        """Owned tasks that wait for their previous owner's release, or for a config."""
        return frozenset(t for t, record in self._tasks.items() if record.phase in NOT_STARTED)

    # -- what happened ---------------------------------------------------------------------

    def assign(
        self,
        snapshot: ConfigSnapshot,
        assigned: Iterable[ConnectorTaskId],
        await_release: frozenset[ConnectorTaskId],
    ) -> None:
        """The tasks of `await_release` start once their previous owner has released them;
        a task whose config is not known yet starts when a config change brings it."""
        events: list[Fed] = []
        for task in sorted(set(assigned) - self._tasks.keys()):
            record = self._tasks[task] = _OwnedTask(config=snapshot.task_config(task))
            if record.config is None or task.connector not in snapshot.connectors:
                continue
            if snapshot.target_state(task.connector) is TargetState.PAUSED:
                events.append((task, TaskEvent.PAUSED))
            elif task in await_release:
                events.append((task, TaskEvent.ASSIGNED_AFTER_RELEASE))
            else:
                events.append((task, TaskEvent.ASSIGNED))
        self._feed_soon(events)

    async def revoke(self, tasks: Iterable[ConnectorTaskId]) -> None:
        await self._feed((task, TaskEvent.REVOKED) for task in sorted(tasks))

    async def follow(self, snapshot: ConfigSnapshot) -> None:
        await self._feed(self._config_events(snapshot))

    async def restart(self, tasks: Iterable[ConnectorTaskId]) -> None:
        await self._feed((task, TaskEvent.RESTART_REQUESTED) for task in tasks)

    def failed(self, task: ConnectorTaskId, *, fenced: bool) -> None:
        """The runtime said the task FAILED: at its start (the start's end says so too) or
        later, its query died or was fenced."""
        self._feed_soon([(task, TaskEvent.FENCED if fenced else TaskEvent.QUERY_DIED)])

    def _config_events(self, snapshot: ConfigSnapshot) -> list[Fed]:
        """A task whose connector was paused or resumed, else whose task config is not the
        one its newest start read (a paused one's is read when it resumes)."""
        events: list[Fed] = []
        for task, record in sorted(self._tasks.items()):
            wanted = snapshot.task_config(task)
            if wanted is None:
                continue
            paused = snapshot.target_state(task.connector) is TargetState.PAUSED
            if paused != (record.phase in PAUSING):
                events.append((task, TaskEvent.PAUSED if paused else TaskEvent.RESUMED))
            elif not paused and record.config != wanted:
                events.append((task, TaskEvent.CONFIG_CHANGED))
        return events

    # -- the machine's interpreter ---------------------------------------------------------

    async def _feed(self, events: Iterable[Fed]) -> None:
        await self._carry_out_batch(self._step_all(events))

    def _feed_soon(self, events: Iterable[Fed]) -> None:
        """From a callback or a method that cannot await: what the events leave to await
        goes on in the background."""
        batch = self._step_all(events)
        if batch.cancels or batch.stops or batch.aborts:
            finishing = asyncio.create_task(self._carry_out_batch(batch))
            self._background.add(finishing)
            finishing.add_done_callback(self._background.discard)

    async def _carry_out_batch(self, batch: _Batch) -> None:
        """Every stop of a batch ends before any of its tasks starts again (a Kafka sink
        task whose partitions moved takes them over only once the tasks that read them
        have stopped). A start under way is cancelled, not awaited to its end: one that
        never ends (an address that never answers) held every later rebalance; the
        runtime's stop then ends it, within its own bound."""
        if batch.cancels:
            for start in batch.cancels:
                start.cancel()
            await asyncio.wait(batch.cancels)
        held = self._runtime.held()
        stops = [*batch.aborts, *batch.stops]
        await asyncio.gather(*(self._runtime.stop_task(t) for t in stops if t in held))
        for task, record, commands in batch.after_stops:
            for command in commands:
                self._carry_out(task, record, command)
        stopped = [(t, r) for t, r, _ in batch.after_stops if self._tasks.get(t) is r]
        if stopped:
            await self._feed((task, TaskEvent.STOP_FINISHED) for task, _ in stopped)

    def _step_all(self, events: Iterable[Fed]) -> _Batch:
        batch = _Batch()
        for task, event in events:
            record = self._tasks.get(task)
            if record is None:
                continue  # gone: no longer this worker's
            try:
                record.phase, commands = step(record.phase, event)
            except IllegalTaskEvent:
                log.exception("task %s: event refused", task)
                continue
            if record.phase is TaskPhase.GONE:
                del self._tasks[task]
            for index, command in enumerate(commands):
                if command is TaskCommand.STOP:
                    batch.stops.append(task)
                    batch.after_stops.append((task, record, commands[index + 1 :]))
                    break
                if command is TaskCommand.ABORT_START:
                    batch.aborts.append(task)
                elif command is TaskCommand.CANCEL_START:
                    batch.cancels.extend([record.start] if record.start is not None else [])
                else:
                    self._carry_out(task, record, command)
        return batch

    def _carry_out(self, task: ConnectorTaskId, record: _OwnedTask, command: TaskCommand) -> None:
        match command:
            case TaskCommand.LAUNCH:
                snapshot = self._configs.snapshot()
                record.config = snapshot.task_config(task)
                connector_config = snapshot.connectors.get(task.connector)
                self._in_background(task, record, self._start_task(task, record, connector_config))
            case TaskCommand.AWAIT_RELEASE:
                self._in_background(task, record, self._await_release(task, record))
            case TaskCommand.FORGET_RESTARTS:
                self._forget_restarts(task)
            case TaskCommand.GIVE_UP:
                self._give_up()
            case shown:
                self._report(task, SHOWN[shown])

    def _in_background(
        self,
        task: ConnectorTaskId,
        record: _OwnedTask,
        work: Coroutine[None, None, None],
    ) -> None:
        """No step of the group loop waits for a Spark query's start."""
        record.start = asyncio.create_task(work, name=f"start-{task}")
        record.start.add_done_callback(self._started)

    @staticmethod
    def _started(done: asyncio.Task[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            log.error("starting %s failed", done.get_name(), exc_info=done.exception())

    async def _start_task(
        self,
        task: ConnectorTaskId,
        record: _OwnedTask,
        connector_config: Mapping[str, str] | None,
    ) -> None:
        """One start, with the configs as they were when the machine asked for it; a start
        with nothing to start (the connector was deleted meanwhile) ends as a failed one.
        At most `STARTS_AT_ONCE` at once; one revoked while it waits for its turn does not
        start."""
        if connector_config is not None and record.config is not None:
            async with self._launching:
                if self._tasks.get(task) is record:
                    generation = self._generation()
                    await self._runtime.start_task(
                        task, connector_config, record.config, generation
                    )
        status = self._runtime.task_status(task)
        running = status is not None and status.state is TaskState.RUNNING
        record.start = None
        if self._tasks.get(task) is record:
            await self._feed(
                [(task, TaskEvent.START_FINISHED if running else TaskEvent.START_FAILED)]
            )

    async def _await_release(self, task: ConnectorTaskId, record: _OwnedTask) -> None:
        """A task handed over in the round that revokes it starts once its previous owner
        has released it; not released in time, it starts all the same, and its claim
        fences the old owner's query (`worker.plugins.task_claims`)."""
        if not await self._runtime.await_release(task):
            log.warning("%s was not released in time by its previous owner; claiming it", task)
        record.start = None
        if self._tasks.get(task) is record:
            await self._feed([(task, TaskEvent.RELEASED)])
