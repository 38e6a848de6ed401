"""The work this worker runs: its connectors and Spark tasks, and the statuses it writes.

The group loop decides what this worker owns; this module starts and stops that work,
keeps it in step with the config topic between rebalances (target states, changed task
configs, restart requests), restarts what failed after a back-off (`herder.auto_restart`)
and reports every change to the status topic.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from functools import partial

from herder.auto_restart import RestartPolicy, RestartTracker, is_fenced
from herder.config_records import ConfigSnapshot, RestartRequest, TargetState
from herder.config_store import ConfigStore
from herder.restart_timer import RestartTimer, Submit
from herder.runtime import ConnectorPlugins, TaskRuntime
from herder.status_store import Status, StatusStore
from herder.status_writer import StatusWriter
from protocol.messages import EMPTY_ALLOCATION, Allocation, ConnectorTaskId
from worker.runtime.task_state import StartupCounts, TaskState, TaskStatus

log = logging.getLogger(__name__)

STARTS_AT_ONCE = 4
"""Task starts (Spark query launches) under way at once. Each holds a thread of the event
loop's default executor (6 on 2 cores) for seconds; unbounded, a round that assigned many
tasks took every thread, and the herder's blocking calls (a write's config checks, its
task configs) waited behind them. At 2, the fleet bench's 40 restarts took 100 s, not 36."""

CONNECTOR_STATE = {
    TargetState.STARTED: TaskState.RUNNING,
    TargetState.PAUSED: TaskState.PAUSED,
    TargetState.STOPPED: TaskState.STOPPED,
}


class LocalWork:
    """What this worker owns, and the statuses it reports for it: a held task's own
    (RUNNING, FAILED) as its runtime tells them, and what this worker decides (PAUSED,
    RESTARTING, UNASSIGNED, a connector's state). It keeps no copy of them: the runtime
    holds a task's, the status topic the cluster's.

    `generation` tells the generation a status happened in; `clock` times automatic
    restarts. What fails is restarted automatically as `restart_policy` (the
    worker's `auto.restart.*`, which a connector's own keys override) says, by the group
    loop: `submit` queues work for it (`RequestQueue.submit`).
    """

    def __init__(
        self,
        worker_id: str,
        runtime: TaskRuntime,
        plugins: ConnectorPlugins,
        configs: ConfigStore,
        statuses: StatusStore,
        generation: Callable[[], int],
        clock: Callable[[], float],
        *,
        restart_policy: RestartPolicy,
        submit: Submit,
    ) -> None:
        self._worker_id = worker_id
        self._runtime = runtime
        self._plugins = plugins
        self._configs = configs
        self._statuses = statuses
        self._generation = generation
        self.owned: Allocation = EMPTY_ALLOCATION
        self._started_configs: dict[ConnectorTaskId, Mapping[str, str]] = {}
        self._connector_targets: dict[str, TargetState] = {}
        self._starting: dict[ConnectorTaskId, asyncio.Task[None]] = {}
        """Each task's newest start under way (an earlier one it waits for is its `after`):
        a revocation cancels it, wherever it is."""
        self._launching = asyncio.Semaphore(STARTS_AT_ONCE)
        self.status_writer = StatusWriter(statuses)
        self.connector_startups = StartupCounts()
        self._restart_policy = restart_policy
        self.restarts = RestartTracker(clock)
        self._restart_timer = RestartTimer(submit, self._restart_due)
        self.claimed_elsewhere = asyncio.Event()
        """Set when a task of this worker was found fenced by another worker's claim: the
        group loop rejoins, giving it up (`give_up_lost`), so the leader learns at once
        that nobody here runs it, not at the next rebalance, if any."""

    # -- starting and stopping -------------------------------------------------------------

    def start(self, assigned: Allocation, await_release: Allocation = EMPTY_ALLOCATION) -> None:
        """Start in the background: a Spark query can take seconds to start under load, and
        the group loop must stay free to rejoin the next rebalance meanwhile. The tasks of
        `await_release` start once their previous owner has released them."""
        snapshot = self._configs.snapshot()
        self.owned = self.owned.union(assigned)
        for connector in sorted(assigned.connectors):
            self._start_connector(connector, snapshot)
        for task in sorted(assigned.tasks):
            self._launch(task, snapshot, await_release=task in await_release.tasks)

    def _launch(
        self,
        task: ConnectorTaskId,
        snapshot: ConfigSnapshot,
        *,
        await_release: bool = False,
        after: asyncio.Task[None] | None = None,
    ) -> None:
        """Start the task in the background: no step of the group loop waits for a Spark
        query's start. A revocation cancels it. `after`: a start of the task under way,
        which ends (and its query stops) first."""
        starting = asyncio.create_task(
            self._start_task(task, snapshot, await_release=await_release, after=after),
            name=f"start-{task}",
        )
        self._starting[task] = starting
        starting.add_done_callback(partial(self._started, task))

    async def stop(self, revoked: Allocation) -> None:
        """Give the work up first, then stop it: while the stops are awaited, a restart
        request or a config change must not start a revoked task again (and claim it
        from its next owner). A start under way is cancelled, not awaited: a start that
        never ends (an address that never answers) held every later rebalance; the
        runtime's stop then ends it, within its own bound."""
        revoked = revoked.intersection(self.owned)
        if revoked.is_empty():
            return
        self.owned = self.owned.minus(revoked)
        starting = [self._starting[t] for t in revoked.tasks if t in self._starting]
        for start in starting:
            start.cancel()
        if starting:
            await asyncio.wait(starting)
        held = self._runtime.held()
        await asyncio.gather(
            *(self._runtime.stop_task(t) for t in sorted(revoked.tasks) if t in held)
        )
        for task in sorted(revoked.tasks):
            self._started_configs.pop(task, None)
            self.restarts.forget(task)
            self._report(task, TaskState.UNASSIGNED)
        for connector in sorted(revoked.connectors):
            self._connector_targets.pop(connector, None)
            self.restarts.forget(connector)
            self._report(connector, TaskState.UNASSIGNED)

    async def stop_all(self) -> None:
        await self.stop(self.owned)

    async def give_up_lost(self) -> None:
        """Before each JoinGroup: give up the tasks another worker has claimed since this
        one started them, so that the subscription reports only what this worker runs. A
        worker thawed from a freeze still owned what the group had handed on meanwhile;
        reported as its own, the leader stopped the live copies to hand them "back" to a
        worker whose queries had been fenced, and nobody ran them."""
        self.claimed_elsewhere.clear()
        lost = (await self._runtime.lost_to_others()) & self.owned.tasks
        if lost:
            names = ", ".join(str(task) for task in sorted(lost))
            log.warning("another worker has claimed %s; giving them up", names)
            await self.stop(Allocation.of(tasks=lost))

    async def warm_up(self) -> None:
        await self._runtime.warm_up()

    def _started(self, task: ConnectorTaskId, done: asyncio.Task[None]) -> None:
        if self._starting.get(task) is done:
            del self._starting[task]
        if not done.cancelled() and done.exception() is not None:
            log.error("starting task %s failed", task, exc_info=done.exception())

    def _start_connector(self, name: str, snapshot: ConfigSnapshot) -> None:
        config = snapshot.connectors.get(name)
        if config is None:
            return
        target = snapshot.target_state(name)
        self._connector_targets[name] = target
        self.connector_startups.attempts += 1
        try:
            self._plugins.validate(config)
        except ValueError as exc:
            self.connector_startups.failures += 1
            self._report(name, TaskState.FAILED, str(exc))
            return
        self.connector_startups.successes += 1
        self._report(name, CONNECTOR_STATE[target])

    async def _start_task(
        self,
        task: ConnectorTaskId,
        snapshot: ConfigSnapshot,
        *,
        await_release: bool = False,
        after: asyncio.Task[None] | None = None,
    ) -> None:
        """Starts only work this worker still owns: a restart or reconfiguration that
        began before a revocation must not outlive it. A task handed over in the round
        that revokes it (`await_release`) starts once its previous owner has released it;
        not released in time, it starts all the same, and its claim fences the old owner's
        query (`worker.runtime.task_claims`)."""
        if after is not None:
            try:
                await asyncio.wait([after])
            except asyncio.CancelledError:
                after.cancel()
                raise
            if task in self._runtime.held():
                await self._runtime.stop_task(task)
        task_config = snapshot.task_config(task)
        connector_config = snapshot.connectors.get(task.connector)
        if task_config is None or connector_config is None or task not in self.owned.tasks:
            return
        self._started_configs[task] = task_config
        if snapshot.target_state(task.connector) is TargetState.PAUSED:
            self._report(task, TaskState.PAUSED)
            return
        if await_release and not await self._runtime.await_release(task):
            log.warning("%s was not released in time by its previous owner; claiming it", task)
        await self._launching.acquire()
        try:
            if task in self.owned.tasks:
                generation = self._generation()
                await self._runtime.start_task(task, connector_config, task_config, generation)
        finally:
            self._launching.release()

    # -- following the config topic --------------------------------------------------------

    async def follow_config(self, snapshot: ConfigSnapshot) -> None:
        """Bring what this worker runs in line with the config topic between rebalances:
        target states, changed task configs and restart requests."""
        self.follow_target_states(snapshot)
        await self._restart_reconfigured_tasks(snapshot)
        for request in self._configs.take_restart_requests():
            await self._restart(request, snapshot)

    def follow_target_states(self, snapshot: ConfigSnapshot) -> None:
        """Report each owned connector's new target state. Also called before the
        rebalance a stop or a resume needs (it changes which tasks exist): the herder
        knows the state from the config topic, and that round takes seconds."""
        for name in sorted(self.owned.connectors):
            if self._connector_targets.get(name) != snapshot.target_state(name):
                self.restarts.forget(name)
                self._start_connector(name, snapshot)

    async def _restart(self, request: RestartRequest, snapshot: ConfigSnapshot) -> None:
        """Carry out the part of a restart request that concerns what this worker runs,
        a task from its checkpoint. A manual restart counts automatic ones from zero."""
        if request.connector in self.owned.connectors:
            status = self._statuses.connector(request.connector)
            if request.covers_connector(self._failed_here(status)):
                self.restarts.forget(request.connector)
                self._restart_connector(request.connector, snapshot)
        for task in sorted(self.owned.tasks):
            held = self._runtime.task_status(task)
            if request.covers_task(task, held is not None and held.state is TaskState.FAILED):
                self.restarts.forget(task)
                await self._restart_task(task, snapshot)

    async def _restart_due(self) -> None:
        """The automatic restarts now due, of work this worker still owns. Runs in the
        group loop (`RestartTimer` queues it), as a restart request does."""
        snapshot = self._configs.snapshot()
        try:
            for item in self.restarts.take_due():
                if isinstance(item, ConnectorTaskId):
                    await self._restart_task(item, snapshot)
                else:
                    self._restart_connector(item, snapshot)
        finally:
            self._restart_timer.arm(self.restarts.next_due_in())

    def _restart_connector(self, name: str, snapshot: ConfigSnapshot) -> None:
        if name in self.owned.connectors:
            self._report(name, TaskState.RESTARTING)
            self._start_connector(name, snapshot)

    async def _restart_task(self, task: ConnectorTaskId, snapshot: ConfigSnapshot) -> None:
        """A task still starting restarts once that start ends (`_launch`'s `after`): the
        restart is not lost, and the group loop does not wait for a query's start."""
        if task not in self.owned.tasks:
            return
        self._report(task, TaskState.RESTARTING)
        if task in self._runtime.held():
            await self._runtime.stop_task(task)
        self._launch(task, snapshot, after=self._starting.get(task))

    async def close_restarts(self) -> None:
        """No more automatic restarts: the worker is stopping."""
        await self._restart_timer.close()

    async def _restart_reconfigured_tasks(self, snapshot: ConfigSnapshot) -> None:
        """Restart tasks whose task config or target state changed under them (a task
        still starting: after that start). Every such task stops before any starts again:
        a Kafka sink task whose partitions moved (`tasks.max` changed) takes them over only
        once the tasks that read them have stopped, not behind its own start."""
        restarted = []
        for task in sorted(self.owned.tasks):
            wanted = snapshot.task_config(task)
            paused = snapshot.target_state(task.connector) is TargetState.PAUSED
            held = task in self._runtime.held()
            if wanted is None or task not in self.owned.tasks:
                continue
            if task in self._starting:
                if paused or self._started_configs.get(task) != wanted:
                    self._launch(task, snapshot, after=self._starting[task])
            elif paused and held:
                await self._runtime.stop_task(task)
                self._report(task, TaskState.PAUSED)
            elif not paused and (not held or self._started_configs.get(task) != wanted):
                self.restarts.forget(task)
                if held:
                    await self._runtime.stop_task(task)
                restarted.append(task)
        for task in restarted:
            self._launch(task, snapshot)

    def _failed_here(self, status: Status | None) -> bool:
        """Of a connector: whether this worker reported it FAILED (a task's state is its
        runtime's, `TaskRuntime.task_status`)."""
        return (
            status is not None
            and status.state is TaskState.FAILED
            and status.worker_id == self._worker_id
        )

    # -- statuses --------------------------------------------------------------------------

    def mark_unassigned(self, unplaced: Allocation) -> None:
        """Leader only: lost work that waits for the delay shows UNASSIGNED, not the RUNNING
        its dead worker last wrote (the newer generation wins on read)."""
        for task in sorted(unplaced.tasks):
            status = self._statuses.task(task)
            if status is not None and status.state is not TaskState.UNASSIGNED:
                self._report(task, TaskState.UNASSIGNED)
        for connector in sorted(unplaced.connectors):
            status = self._statuses.connector(connector)
            if status is not None and status.state is not TaskState.UNASSIGNED:
                self._report(connector, TaskState.UNASSIGNED)

    def on_task_state(self, task: ConnectorTaskId, status: TaskStatus) -> None:
        """The runtime's callback; must be called on the herder's event loop. The status is
        published as the runtime gives it (the time a query started is the runtime's)."""
        if task in self.owned.tasks:
            self._report(task, status.state, status.trace, status.started_at)
            if status.state is TaskState.FAILED and is_fenced(status.trace):
                self.claimed_elsewhere.set()

    def _report(
        self,
        item: str | ConnectorTaskId,
        state: TaskState,
        trace: str | None = None,
        started_at: str | None = None,
    ) -> None:
        """Queue a status write, unless the connector was deleted (its statuses are gone).

        The status carries the generation it happened in, not the one current when the
        write goes out: a stop written late must not outrank the new owner's start.
        """
        connector = item.connector if isinstance(item, ConnectorTaskId) else item
        if not self._configs.has_connector(connector):
            return
        if state is TaskState.FAILED:
            config = self._configs.snapshot().connectors.get(connector, {})
            verdict = self.restarts.failed(item, self._restart_policy.for_connector(config), trace)
            if (note := verdict.note(item)) is not None:
                log.info("%s: %s", item, note)
            trace = verdict.appended_to(trace, item)
            self._restart_timer.arm(self.restarts.next_due_in())
        else:
            self.restarts.reported(item, state)
        status = Status(state, self._worker_id, self._generation(), trace, started_at)
        self.status_writer.put(item, status)
