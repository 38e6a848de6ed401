"""The work this worker runs: its connectors and Spark tasks, and the statuses it writes.

The group loop decides what this worker owns; this module starts and stops that work,
keeps it in step with the config topic between rebalances (target states, changed task
configs, restart requests), restarts what failed after a back-off (`herder.tasks.auto_restart`)
and reports every change to the status topic. What happens to a task is decided by its
machine (`herder.tasks.task_machine`); this module feeds it events and carries its commands out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from herder.runtime import ConnectorPlugins, TaskRuntime
from herder.stores.config_records import ConfigSnapshot, RestartRequest, TargetState
from herder.stores.config_store import ConfigStore
from herder.stores.status_store import Status, StatusStore
from herder.stores.status_writer import StatusWriter
from herder.tasks.auto_restart import RestartPolicy, RestartTracker, is_fenced
from herder.tasks.restart_timer import RestartTimer, Submit
from herder.tasks.task_work import TaskWork
from protocol.messages import EMPTY_ALLOCATION, Allocation, ConnectorTaskId
from worker.plugins.task_state import StartupCounts, TaskState, TaskStatus

log = logging.getLogger(__name__)

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
        self._connectors: set[str] = set()
        self._connector_targets: dict[str, TargetState] = {}
        self.status_writer = StatusWriter(statuses)
        self.connector_startups = StartupCounts()
        self._restart_policy = restart_policy
        self.restarts = RestartTracker(clock)
        self._restart_timer = RestartTimer(submit, self._restart_due)
        self.claimed_elsewhere = asyncio.Event()
        """Set when a task of this worker was found fenced by another worker's claim: the
        group loop rejoins, giving it up (`give_up_lost`), so the leader learns at once
        that nobody here runs it, not at the next rebalance, if any."""
        self._tasks = TaskWork(
            runtime,
            configs,
            generation,
            report=self._report,
            forget_restarts=self.restarts.forget,
            give_up=self.claimed_elsewhere.set,
        )

    @property
    def owned(self) -> Allocation:
        return Allocation.of(self._connectors, self._tasks.owned())

    @property
    def at_work(self) -> Allocation:
        """What this worker runs, starts or stops: a task handed over in the round that
        revokes it is owned twice until its previous owner has stopped it, and at work
        on one worker at a time."""
        return self.owned.minus(Allocation.of((), self._tasks.not_started()))

    # -- starting and stopping -------------------------------------------------------------

    def start(self, assigned: Allocation, await_release: Allocation = EMPTY_ALLOCATION) -> None:
        """Start in the background: a Spark query can take seconds to start under load, and
        the group loop must stay free to rejoin the next rebalance meanwhile. The tasks of
        `await_release` start once their previous owner has released them."""
        snapshot = self._configs.snapshot()
        self._connectors.update(assigned.connectors)
        for connector in sorted(assigned.connectors):
            self._start_connector(connector, snapshot)
        self._tasks.assign(snapshot, assigned.tasks, await_release.tasks)

    async def stop(self, revoked: Allocation) -> None:
        """Give the work up first, then stop it: while the stops are awaited, a restart
        request or a config change must not start a revoked task again (and claim it
        from its next owner)."""
        revoked = revoked.intersection(self.owned)
        if revoked.is_empty():
            return
        self._connectors -= revoked.connectors
        await self._tasks.revoke(revoked.tasks)
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
        lost = (await self._runtime.lost_to_others()) & self._tasks.owned()
        if lost:
            names = ", ".join(str(task) for task in sorted(lost))
            log.warning("another worker has claimed %s; giving them up", names)
            await self.stop(Allocation.of(tasks=lost))

    async def warm_up(self) -> None:
        await self._runtime.warm_up()

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

    # -- following the config topic --------------------------------------------------------

    async def follow_config(self, snapshot: ConfigSnapshot) -> None:
        """Bring what this worker runs in line with the config topic between rebalances:
        target states, changed task configs and restart requests."""
        self.follow_target_states(snapshot)
        await self._tasks.follow(snapshot)
        for request in self._configs.take_restart_requests():
            await self._restart(request, snapshot)

    def follow_target_states(self, snapshot: ConfigSnapshot) -> None:
        """Report each owned connector's new target state. Also called before the
        rebalance a stop or a resume needs (it changes which tasks exist): the herder
        knows the state from the config topic, and that round takes seconds."""
        for name in sorted(self._connectors):
            if self._connector_targets.get(name) != snapshot.target_state(name):
                self.restarts.forget(name)
                self._start_connector(name, snapshot)

    async def _restart(self, request: RestartRequest, snapshot: ConfigSnapshot) -> None:
        """Carry out the part of a restart request that concerns what this worker runs,
        a task from its checkpoint. A manual restart counts automatic ones from zero."""
        if request.connector in self._connectors:
            status = self._statuses.connector(request.connector)
            if request.covers_connector(self._failed_here(status)):
                self.restarts.forget(request.connector)
                self._restart_connector(request.connector, snapshot)
        restarted = []
        for task in sorted(self._tasks.owned()):
            held = self._runtime.task_status(task)
            if request.covers_task(task, held is not None and held.state is TaskState.FAILED):
                self.restarts.forget(task)
                restarted.append(task)
        await self._tasks.restart(restarted)

    async def _restart_due(self) -> None:
        """The automatic restarts now due, of work this worker still owns. Runs in the
        group loop (`RestartTimer` queues it), as a restart request does."""
        snapshot = self._configs.snapshot()
        try:
            due = self.restarts.take_due()
            for item in due:
                if not isinstance(item, ConnectorTaskId):
                    self._restart_connector(item, snapshot)
            tasks = [item for item in due if isinstance(item, ConnectorTaskId)]
            await self._tasks.restart(tasks)
        finally:
            self._restart_timer.arm(self.restarts.next_due_in())

    def _restart_connector(self, name: str, snapshot: ConfigSnapshot) -> None:
        if name in self._connectors:
            self._report(name, TaskState.RESTARTING)
            self._start_connector(name, snapshot)

    async def close_restarts(self) -> None:
        """No more automatic restarts: the worker is stopping."""
        await self._restart_timer.close()

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
        published as the runtime gives it (the time a query started is the runtime's); a
        failure is the machine's event (a start's failure: its start's end)."""
        if task in self._tasks.owned():
            self._report(task, status.state, status.trace, status.started_at)
            if status.state is TaskState.FAILED:
                self._tasks.failed(task, fenced=is_fenced(status.trace))

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
