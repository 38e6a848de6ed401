"""The distributed herder: one per worker, it keeps this worker's share of the work in step
with the group's decisions.

It owns the loop join -> apply assignment -> heartbeat until something asks for a
rebalance. Cooperative rules (KIP-415): work is stopped only when the leader revokes it,
and a worker that stopped something rejoins at once so the leader can hand it on in the
next generation. The leader additionally turns connector configs into task configs, so
that one writer decides the task set of every connector.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Coroutine, Mapping
from datetime import UTC, datetime
from functools import partial, wraps
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from herder.assignor import inherited_deadline
from herder.config_store import ConfigSnapshot, ConfigStore, RestartRequest, TargetState
from herder.errors import (
    ConnectorExists,
    ConnectorNotFound,
    ConnectorNotStopped,
    InvalidConnectorConfig,
    InvalidOffsets,
    NotLeader,
    TaskNotFound,
    TasksStillRunning,
)
from herder.leader import LeaderPlanner
from herder.membership import (
    CoordinatorUnavailable,
    Generation,
    GroupMember,
    HeartbeatOutcome,
    JoinedMembers,
)
from herder.runtime import ConnectorPlugins, TaskRuntime
from herder.status_store import Status, StatusStore
from herder.topics import ensure_compacted_topics
from herder.views import ClusterView, ConnectorView
from protocol import PROTOCOL_NAME, ProtocolError
from protocol.codec import decode_assignment, encode_subscription
from protocol.messages import (
    EMPTY_ALLOCATION,
    Allocation,
    Assignment,
    AssignmentError,
    ConnectorTaskId,
    Subscription,
)
from protocol.negotiation import must_release_for_eager, next_version_after
from protocol.versions import EAGER_VERSION, max_version_for, parse_connect_protocol
from worker.checkpoint_offsets import (
    OffsetsError,
    SourceOffset,
    alter_offsets,
    committed_offsets,
    reset_offsets,
)
from worker.config import WorkerConfig
from worker.plugins import checkpoint_dir_for, checkpointed_tasks
from worker.task_state import TaskState

log = logging.getLogger(__name__)

CATCH_UP_ATTEMPTS = 3
"""Failed config catch-ups in a row after which a worker stops its work."""
FENCE_CHECK_INTERVAL_S = 0.5
STATUS_FLUSH_TIMEOUT_S = 10.0
"""How long shutdown waits for the last status writes before leaving the group anyway."""


_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def _serialized(
    write: Callable[Concatenate[DistributedHerder, _Params], Coroutine[Any, Any, _Result]],
) -> Callable[Concatenate[DistributedHerder, _Params], Coroutine[Any, Any, _Result]]:
    """One REST write at a time on this worker (the leader, where writes land): each
    checks the config snapshot and then writes, and two interleaved creates of one name
    would both find it free and both answer 201."""

    @wraps(write)
    async def one_at_a_time(
        herder: DistributedHerder, /, *args: _Params.args, **kwargs: _Params.kwargs
    ) -> _Result:
        async with herder._writes:
            return await write(herder, *args, **kwargs)

    return one_at_a_time


class DistributedHerder:
    """Runs this worker's share of connectors and tasks as the group decides."""

    def __init__(
        self,
        config: WorkerConfig,
        runtime: TaskRuntime,
        plugins: ConnectorPlugins,
        clock: Callable[[], float] = time.time,
        set_logger_level: Callable[[str, str], object] | None = None,
    ) -> None:
        """`set_logger_level(namespace, level)` applies the cluster-wide log levels that
        any worker writes to the config topic after this one started (KIP-976)."""
        self._config = config
        self._set_logger_level = set_logger_level
        self._runtime = runtime
        self._plugins = plugins
        self._clock = clock
        security = config.kafka_security()
        self.configs = ConfigStore(config.bootstrap_servers, config.config_storage_topic, security)
        self.statuses = StatusStore(config.bootstrap_servers, config.status_storage_topic, security)
        self._member = GroupMember(
            config.bootstrap_servers,
            config.group_id,
            PROTOCOL_NAME,
            session_timeout_ms=config.session_timeout_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            instance_id=config.group_instance_id,
            security=security,
        )
        self._max_version = max_version_for(parse_connect_protocol(config.connect_protocol))
        self._version = self._max_version
        self._group_version = self._max_version
        self._planner: LeaderPlanner | None = None
        self._generation: Generation | None = None
        self._applied_generation = -1
        self._joined_with = b""
        self._static_rejoin_forced = False
        self._last_assignment: tuple[Assignment, int] | None = None
        self._leaving = False
        self.leader_url: str | None = None
        self.owned: Allocation = EMPTY_ALLOCATION
        self._started_configs: dict[ConnectorTaskId, Mapping[str, str]] = {}
        self._task_configs_refreshed_at: dict[str, float] = {}
        self._connector_targets: dict[str, TargetState] = {}
        self._configured_at_join: Allocation = EMPTY_ALLOCATION
        self._rejoin = asyncio.Event()
        self._assignment_applied = asyncio.Event()
        self._config_changed = asyncio.Event()
        self._rejoin_at: float | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._catch_up_failures = 0
        self._fenced = False
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._status_writes: asyncio.Queue[tuple[str | ConnectorTaskId, Status]] = asyncio.Queue()
        self._status_writer: asyncio.Task[None] | None = None
        self._starting: dict[ConnectorTaskId, asyncio.Task[None]] = {}
        self._writes = asyncio.Lock()
        self.ready = False
        self.unhealthy: str | None = None
        """Why a worker that was ready is not any more (None while starting or ready)."""
        self.cluster_id: str | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def worker_id(self) -> str:
        return self._config.worker_id

    @property
    def generation(self) -> int:
        return self._generation.generation if self._generation else -1

    @property
    def is_leader(self) -> bool:
        return self._generation is not None and self._generation.is_leader

    async def start(self) -> None:
        """Connect, create the internal topics, replay them, then run the group loop.

        Raises `CoordinatorUnavailable` when the broker cannot be reached at all, so the
        CLI can say so in one line instead of retrying forever.
        """
        await self._member.start()
        try:
            self.cluster_id = await ensure_compacted_topics(
                self._config.bootstrap_servers,
                [
                    self._config.config_storage_topic,
                    self._config.status_storage_topic,
                    self._config.offset_storage_topic,
                ],
                self._config.kafka_security(),
            )
        except Exception:
            await self._member.close()
            raise
        self.configs.add_listener(self._config_changed.set)
        await self.configs.start()
        await self.statuses.start()
        await self.configs.read_to_end()
        await self.statuses.read_to_end()
        self.configs.take_restart_requests()
        self.configs.take_logger_levels()
        self.configs.add_listener(self._apply_logger_levels)
        self._status_writer = asyncio.create_task(self._write_statuses(), name="status-writer")
        self._watchdog = asyncio.create_task(self._fence_when_out_of_touch(), name="watchdog")
        self._loop_task = asyncio.create_task(self._run(), name="herder")

    async def stop(self) -> None:
        """Stop every task, record them UNASSIGNED, then leave the group and close."""
        self.ready = False
        self.unhealthy = "the worker is shutting down"
        for task in (self._watchdog, self._loop_task, self._heartbeat_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self._stop_work(self.owned)
        try:
            async with asyncio.timeout(STATUS_FLUSH_TIMEOUT_S):
                await self._status_writes.join()
        except TimeoutError:
            log.warning("gave up writing the last statuses: the broker does not answer")
        await self._member.leave()
        if self._status_writer is not None:
            self._status_writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._status_writer
        await self.statuses.stop()
        await self.configs.stop()
        await self._member.close()

    async def leave_for_good(self, timeout_s: float) -> bool:
        """Announce that this worker is going away for good (scale-down); whether it ran
        nothing any more within `timeout_s`.

        The leader revokes all work of a leaving member at once and places it elsewhere in
        the next round, so it moves without waiting for `scheduled.rebalance.max.delay.ms`.
        The worker stays a member, running nothing, until it is stopped.
        """
        announced_in = self._applied_generation
        self._leaving = True
        self._rejoin.set()
        try:
            async with asyncio.timeout(timeout_s):
                while self._applied_generation <= announced_in or not self.owned.is_empty():
                    self._assignment_applied.clear()
                    await self._assignment_applied.wait()
        except TimeoutError:
            return False
        return True

    async def wait_closed(self) -> None:
        """Return when the group loop ends (it only ends on a fatal error)."""
        if self._loop_task is not None:
            await self._loop_task

    # -- the group loop --------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._rejoin.clear()
            self._config_changed.clear()
            self._fenced = False
            if self._group_version == EAGER_VERSION:
                await self._stop_work(self.owned)
            metadata = self._subscription()
            try:
                generation = await self._member.join(
                    metadata, self._on_leader, self._forget_leader_round
                )
            except CoordinatorUnavailable as exc:
                log.warning("%s; retrying", exc)
                continue
            except TimeoutError:
                await self._config_unreadable()
                continue
            if await self._rebalance_was_skipped(generation, metadata):
                continue
            self._generation = generation
            if self._fenced:
                log.info("fenced while joining; rejoining to report that I run nothing")
                self._fenced = False
                continue
            self._heartbeat_task = asyncio.create_task(self._heartbeat(), name="heartbeat")
            try:
                await self._apply(generation)
                self._assignment_applied.set()
                await self._follow_config(self.configs.snapshot())
                self._catch_up_failures = 0
                await self._until_rejoin_needed()
            except TimeoutError:
                await self._config_unreadable()
            finally:
                self._heartbeat_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._heartbeat_task

    async def _rebalance_was_skipped(self, generation: Generation, metadata: bytes) -> bool:
        """Whether the coordinator answered without the rebalance this worker needs, in
        which case it leaves and rejoins to force one (and the caller joins again).

        Two cases, both KIP-345 static membership (`group.instance.id`) by its letter:

        * A process's first join as a static member. Apache Kafka hands a static member
          that rejoins a stable group the generation and the assignment its predecessor
          had, without a rebalance. An incremental cooperative assignment is a change
          (assigned, revoked) that this new process never saw: it would run nothing
          while the leader believes it runs its tasks. After a rebalance, the leader
          sees what it runs (nothing) under its identity and hands its own tasks back at
          once. A first join that was a real rebalance costs one more round, which stops
          nothing anywhere.
        * Tansu answers a changed subscription of a running static member with the
          current generation, so the change (new work, revocations done) would never
          reach the leader.
        """
        first_static_join = (
            self._config.group_instance_id is not None and self._applied_generation < 0
        )
        subscription_ignored = (
            generation.generation == self._applied_generation and metadata != self._joined_with
        )
        if not (first_static_join or subscription_ignored) or self._static_rejoin_forced:
            self._joined_with = metadata
            self._static_rejoin_forced = False
            return False
        log.info(
            "generation %d may not reflect what this worker runs (%s); leaving and rejoining "
            "to force a rebalance",
            generation.generation,
            "first join as a static member" if first_static_join else "subscription ignored",
        )
        self._static_rejoin_forced = True
        await self._member.leave()
        return True

    def _subscription(self) -> bytes:
        snapshot = self.configs.snapshot()
        self._configured_at_join = snapshot.configured()
        return encode_subscription(
            Subscription(
                version=self._version,
                max_version=self._max_version,
                worker_id=self.worker_id,
                url=self._config.rest_url,
                config_offset=snapshot.offset,
                allocation=self.owned,
                instance_id=self._config.group_instance_id,
                leaving=self._leaving,
            )
        )

    async def _on_leader(self, members: JoinedMembers) -> Mapping[str, bytes]:
        await self.configs.read_to_end()
        await self._reconcile_task_configs()
        await self.configs.read_to_end()
        if self._planner is None:
            inherited = (
                inherited_deadline(*self._last_assignment) if self._last_assignment else None
            )
            self._planner = LeaderPlanner(
                leader_max_version=self._max_version,
                max_delay_ms=self._config.scheduled_rebalance_max_delay_ms,
                inherited_deadline_ms=inherited,
            )
        return self._planner.plan(
            members,
            leader_url=self._config.rest_url,
            snapshot=self.configs.snapshot(),
            now_ms=int(self._clock() * 1000),
        )

    def _forget_leader_round(self) -> None:
        if self._planner is not None:
            self._planner.forget()

    async def _apply(self, generation: Generation) -> None:
        if self._applied_generation == generation.generation:
            log.info("the coordinator answered with generation %d again", generation.generation)
            return
        self._applied_generation = generation.generation
        if not generation.is_leader:
            self._planner = None
        try:
            assignment = decode_assignment(generation.assignment)
        except ProtocolError as exc:
            log.error(
                "unreadable assignment from leader %s (%s); rejoining", generation.leader_id, exc
            )
            await asyncio.sleep(1)
            self._rejoin.set()
            return
        self._last_assignment = (assignment, int(self._clock() * 1000))
        self.leader_url = assignment.leader_url or None
        log.info(
            "joined generation %d as %s (v%d): assigned %d, revoked %d, delay %d ms%s",
            generation.generation,
            "leader" if generation.is_leader else "follower",
            assignment.version,
            assignment.assigned.size(),
            assignment.revoked.size(),
            assignment.delay_ms,
            f", error {assignment.error.name}" if assignment.failed else "",
        )
        if assignment.error is AssignmentError.CONFIG_MISMATCH:
            log.info("config offset behind the leader's; catching up before rejoining")
            await self.configs.read_to_end()
            self._rejoin.set()
            return
        next_version = next_version_after(assignment, self._version, self._max_version)
        if next_version is not None:
            log.info("protocol version %d -> %d; rejoining", self._version, next_version)
            self._version = next_version
            self._rejoin.set()
        if assignment.failed:
            self._rejoin.set()
            return
        self._group_version = assignment.version
        if must_release_for_eager(assignment, self.owned):
            log.info("the group runs eager now: stopping all work before rejoining")
            await self._stop_work(self.owned)
            self._rejoin.set()
            return
        if assignment.version == EAGER_VERSION:
            revoked = self.owned.minus(assignment.assigned)
            assigned = assignment.assigned.minus(self.owned)
        else:
            revoked, assigned = assignment.revoked, assignment.assigned
        await self._stop_work(revoked)
        if not revoked.is_empty():
            self._rejoin.set()
        self._start_work(assigned)
        if self._planner is not None:
            self._mark_unassigned(self._planner.unplaced)
        self._rejoin_at = (
            self._clock() + assignment.delay_ms / 1000 if assignment.delay_ms > 0 else None
        )
        await self.configs.read_to_end()
        self.ready = True
        self.unhealthy = None
        log.info(
            "generation %d: leader %s, running %d connectors and %d tasks",
            generation.generation,
            self.leader_url,
            len(self.owned.connectors),
            len(self.owned.tasks),
        )

    async def _until_rejoin_needed(self) -> None:
        while not self._rejoin.is_set():
            timeout = self._config.heartbeat_interval_ms / 1000
            if self._rejoin_at is not None:
                timeout = min(timeout, max(0.0, self._rejoin_at - self._clock()))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await _first_of(self._rejoin, self._config_changed)
            if self._rejoin_at is not None and self._clock() >= self._rejoin_at:
                self._rejoin_at = None
                await self._scheduled_rebalance()
            if self._config_changed.is_set():
                self._config_changed.clear()
                await self._on_config_change()
            await self._refresh_task_configs()

    async def _config_unreadable(self) -> None:
        """The config topic could not be read to its end in time (Kafka's KAFKA-9849).

        Running on a stale config is worse than running nothing for a while: leave the
        group so the others are not held up, and after repeated failures stop all work.
        """
        self._catch_up_failures += 1
        self.ready = False
        self.unhealthy = "cannot read the config topic to its end"
        log.error(
            "cannot read the config topic to its end (attempt %d of %d); leaving the group",
            self._catch_up_failures,
            CATCH_UP_ATTEMPTS,
        )
        await self._member.leave()
        if self._catch_up_failures >= CATCH_UP_ATTEMPTS:
            log.error("still behind on the config topic: stopping all work until caught up")
            await self._stop_work(self.owned)
        await asyncio.sleep(min(30.0, 2.0**self._catch_up_failures))

    async def _fence_when_out_of_touch(self) -> None:
        """Stop all work before the coordinator can have given it to another worker.

        A worker that cannot reach the coordinator (or whose rejoin outlasts the rebalance
        time-out) is no longer a member as far as the group knows; its tasks may already
        be assigned elsewhere, so it stops them on its own (Kafka's KAFKA-9184). With or
        without work it is no longer ready: `/health` turns 500 until it has rejoined.
        """
        margin_s = self._config.heartbeat_interval_ms / 1000
        while True:
            await asyncio.sleep(FENCE_CHECK_INTERVAL_S)
            if not self._member.must_fence(margin_s):
                continue
            if self.ready:
                log.warning("no answer from the group coordinator in time: not ready any more")
                self.ready = False
                self.unhealthy = "fenced: the group coordinator did not answer in time"
            if not self.owned.is_empty():
                log.warning("fencing myself: stopping %d tasks", len(self.owned.tasks))
                self._fenced = True
                await self._stop_work(self.owned)
                log.warning("fenced myself: my tasks are stopped until I have rejoined")
                self._rejoin.set()

    async def _scheduled_rebalance(self) -> None:
        """The delay expired: the leader starts the rebalance that resolves lost work.

        Followers need not rejoin: a coordinator answers an unchanged follower with the
        current generation, and the leader's rejoin makes everyone rejoin anyway.
        """
        if not self.is_leader:
            return
        await self.configs.request_rebalance(self.generation, "scheduled rebalance delay expired")
        await self.configs.read_to_end()
        self._rejoin.set()

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self._config.heartbeat_interval_ms / 1000)
            outcome = await self._member.heartbeat()
            if outcome is HeartbeatOutcome.MEMBER_LOST:
                log.warning("lost group membership; stopping all work before rejoining")
                await self._stop_work(self.owned)
            if outcome is not HeartbeatOutcome.OK:
                self._rejoin.set()
                return

    # -- reacting to config changes --------------------------------------------------------

    async def _on_config_change(self) -> None:
        """New or removed work needs a rebalance first; restarting reconfigured tasks waits
        until after it, so a worker busy starting Spark queries does not miss the round."""
        if self.is_leader:
            await self._reconcile_task_configs()
        snapshot = self.configs.snapshot()
        if snapshot.configured() != self._configured_at_join:
            self._rejoin.set()
            return
        await self._follow_config(snapshot)

    async def _follow_config(self, snapshot: ConfigSnapshot) -> None:
        """Bring what this worker runs in line with the config topic between rebalances:
        target states, changed task configs and restart requests."""
        for name in sorted(self.owned.connectors):
            if self._connector_targets.get(name) != snapshot.target_state(name):
                self._start_connector(name, snapshot)
        await self._restart_reconfigured_tasks(snapshot)
        for request in self.configs.take_restart_requests():
            await self._restart(request, snapshot)

    async def _restart(self, request: RestartRequest, snapshot: ConfigSnapshot) -> None:
        """Carry out the part of a restart request that concerns what this worker runs;
        a task restarts from its checkpoint."""
        if request.connector in self.owned.connectors:
            status = self.statuses.connector(request.connector)
            if request.covers_connector(_failed_here(status, self.worker_id)):
                self._report(request.connector, TaskState.RESTARTING)
                self._start_connector(request.connector, snapshot)
        for task in sorted(self.owned.tasks):
            failed = _failed_here(self.statuses.task(task), self.worker_id)
            if (
                task not in self.owned.tasks
                or task in self._starting
                or not request.covers_task(task, failed)
            ):
                continue
            self._report(task, TaskState.RESTARTING)
            if task in self._runtime.held():
                await self._runtime.stop_task(task)
            await self._start_task(task, snapshot)

    async def _reconcile_task_configs(self, only: Collection[str] | None = None) -> None:
        """Leader only: make every started connector's (or `only` those connectors')
        committed task configs current. A plugin may look at the outside world to split
        its work, so it is asked off the event loop."""
        snapshot = self.configs.snapshot()
        for name, config in snapshot.connectors.items():
            if snapshot.target_state(name) is TargetState.STOPPED:
                continue
            if only is not None and name not in only:
                continue
            self._task_configs_refreshed_at[name] = self._clock()
            try:
                wanted = await asyncio.to_thread(self._plugins.task_configs, config)
            except Exception as exc:
                log.error("connector %s: cannot compute task configs: %s", name, exc)
                continue
            if list(snapshot.task_configs.get(name, ())) != wanted:
                log.info("connector %s: task configs changed; %d tasks now", name, len(wanted))
                await self.configs.put_task_configs(name, wanted)

    async def _refresh_task_configs(self) -> None:
        """Leader only: reconcile the connectors whose `task_configs_refresh_ms` is due."""
        if not self.is_leader:
            return
        now = self._clock()
        due = []
        for name, config in self.configs.snapshot().connectors.items():
            try:
                interval = self._plugins.task_configs_refresh_s(config)
            except ValueError:
                continue
            if (
                interval is not None
                and now >= self._task_configs_refreshed_at.get(name, 0.0) + interval
            ):
                due.append(name)
        if due:
            await self._reconcile_task_configs(only=due)

    async def _restart_reconfigured_tasks(self, snapshot: ConfigSnapshot) -> None:
        """Restart running tasks whose task config or target state changed under them."""
        for task in sorted(self.owned.tasks):
            wanted = snapshot.task_config(task)
            paused = snapshot.target_state(task.connector) is TargetState.PAUSED
            held = task in self._runtime.held()
            if wanted is None or task not in self.owned.tasks or task in self._starting:
                continue
            if paused and held:
                await self._runtime.stop_task(task)
                self._report(task, TaskState.PAUSED)
            elif not paused and (not held or self._started_configs.get(task) != wanted):
                if held:
                    await self._runtime.stop_task(task)
                await self._start_task(task, snapshot)

    # -- starting and stopping work --------------------------------------------------------

    def _start_work(self, assigned: Allocation) -> None:
        """Start in the background: a Spark query can take seconds to start under load, and
        the group loop must stay free to rejoin the next rebalance meanwhile."""
        snapshot = self.configs.snapshot()
        self.owned = self.owned.union(assigned)
        for connector in sorted(assigned.connectors):
            self._start_connector(connector, snapshot)
        for task in sorted(assigned.tasks):
            starting = asyncio.create_task(self._start_task(task, snapshot), name=f"start-{task}")
            self._starting[task] = starting
            starting.add_done_callback(partial(self._started, task))

    def _started(self, task: ConnectorTaskId, done: asyncio.Task[None]) -> None:
        if self._starting.get(task) is done:
            del self._starting[task]
        if not done.cancelled() and done.exception() is not None:
            log.error("starting task %s failed", task, exc_info=done.exception())

    def _start_connector(self, name: str, snapshot: ConfigSnapshot) -> None:
        config = snapshot.connectors.get(name)
        if config is None:
            return
        self._connector_targets[name] = snapshot.target_state(name)
        state = {
            TargetState.STARTED: TaskState.RUNNING,
            TargetState.PAUSED: TaskState.PAUSED,
            TargetState.STOPPED: TaskState.STOPPED,
        }[snapshot.target_state(name)]
        try:
            self._plugins.validate(config)
        except ValueError as exc:
            self._report(name, TaskState.FAILED, str(exc))
            return
        self._report(name, state)

    async def _start_task(self, task: ConnectorTaskId, snapshot: ConfigSnapshot) -> None:
        """Starts only work this worker still owns: a restart or reconfiguration that
        began before a revocation must not outlive it."""
        task_config = snapshot.task_config(task)
        connector_config = snapshot.connectors.get(task.connector)
        if task_config is None or connector_config is None or task not in self.owned.tasks:
            return
        self._started_configs[task] = task_config
        if snapshot.target_state(task.connector) is TargetState.PAUSED:
            self._report(task, TaskState.PAUSED)
            return
        await self._runtime.start_task(task, connector_config, task_config, self.generation)

    async def _stop_work(self, revoked: Allocation) -> None:
        """Give the work up first, then stop it: while the stops are awaited, a restart
        request or a config change must not start a revoked task again (and claim it
        from its next owner)."""
        if revoked.is_empty():
            return
        self.owned = self.owned.minus(revoked)
        await asyncio.gather(*(self._starting[t] for t in revoked.tasks if t in self._starting))
        held = self._runtime.held()
        await asyncio.gather(
            *(self._runtime.stop_task(t) for t in sorted(revoked.tasks) if t in held)
        )
        for task in sorted(revoked.tasks):
            self._started_configs.pop(task, None)
            self._report(task, TaskState.UNASSIGNED)
        for connector in sorted(revoked.connectors):
            self._connector_targets.pop(connector, None)
            self._report(connector, TaskState.UNASSIGNED)

    # -- statuses --------------------------------------------------------------------------

    def _mark_unassigned(self, unplaced: Allocation) -> None:
        """Leader only: lost work that waits for the delay shows UNASSIGNED, not the RUNNING
        its dead worker last wrote (the newer generation wins on read)."""
        for task in sorted(unplaced.tasks):
            status = self.statuses.task(task)
            if status is not None and status.state is not TaskState.UNASSIGNED:
                self._report(task, TaskState.UNASSIGNED)
        for connector in sorted(unplaced.connectors):
            status = self.statuses.connector(connector)
            if status is not None and status.state is not TaskState.UNASSIGNED:
                self._report(connector, TaskState.UNASSIGNED)

    def on_task_state(self, task: ConnectorTaskId, state: TaskState, trace: str | None) -> None:
        """The runtime's callback; must be called on the herder's event loop."""
        if task in self.owned.tasks:
            self._report(task, state, trace)

    def _report(
        self, item: str | ConnectorTaskId, state: TaskState, trace: str | None = None
    ) -> None:
        """Queue a status write, unless the connector was deleted (its statuses are gone).

        The status carries the generation it happened in, not the one current when the
        write goes out: a stop written late must not outrank the new owner's start.
        """
        connector = item.connector if isinstance(item, ConnectorTaskId) else item
        if not self.configs.has_connector(connector):
            return
        started_at = None
        if isinstance(item, ConnectorTaskId) and state is TaskState.RUNNING:
            started_at = _iso_now(self._clock())
        status = Status(state, self.worker_id, self.generation, trace, started_at)
        self._status_writes.put_nowait((item, status))

    async def _write_statuses(self) -> None:
        while True:
            item, status = await self._status_writes.get()
            try:
                if isinstance(item, ConnectorTaskId):
                    await self.statuses.put_task(item, status)
                else:
                    await self.statuses.put_connector(item, status)
            except Exception:
                log.exception("could not write the status of %s", item)
            finally:
                self._status_writes.task_done()

    # -- requests from REST ----------------------------------------------------------------

    def cluster_view(self) -> ClusterView:
        workers = {self.worker_id: EMPTY_ALLOCATION, **self.statuses.owners()}
        workers[self.worker_id] = self.owned
        remaining = 0.0 if self._rejoin_at is None else self._rejoin_at - self._clock()
        return ClusterView(
            leader_url=self.leader_url,
            generation=self.generation,
            protocol_version=self._group_version,
            scheduled_rebalance_ms=max(0, int(remaining * 1000)),
            workers=workers,
        )

    def connector_names(self) -> list[str]:
        return sorted(self.configs.snapshot().connectors)

    def connector(self, name: str) -> ConnectorView:
        snapshot = self.configs.snapshot()
        config = snapshot.connectors.get(name)
        if config is None:
            raise ConnectorNotFound(name)
        count = len(snapshot.tasks_of(name))
        return ConnectorView(
            name=name,
            config=config,
            tasks=tuple(ConnectorTaskId(name, i) for i in range(count)),
            type=self._connector_type(config),
        )

    def _connector_type(self, config: Mapping[str, str]) -> str:
        try:
            return self._plugins.connector_type(config)
        except ValueError:
            return "unknown"

    def task_configs(self, name: str) -> list[tuple[ConnectorTaskId, Mapping[str, str]]]:
        snapshot = self.configs.snapshot()
        if name not in snapshot.connectors:
            raise ConnectorNotFound(name)
        return [(ConnectorTaskId(name, i), c) for i, c in enumerate(snapshot.tasks_of(name))]

    def connector_status(self, name: str) -> Status | None:
        return self.statuses.connector(name)

    def task_status(self, task: ConnectorTaskId) -> Status | None:
        """The task's last status; raises unless the connector currently has that task."""
        if task.task not in range(len(self.connector(task.connector).tasks)):
            raise TaskNotFound(task)
        return self.statuses.task(task)

    @_serialized
    async def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState = TargetState.STARTED,
    ) -> ConnectorView:
        self._require_leader()
        await self.configs.read_to_end()
        if name in self.configs.snapshot().connectors:
            raise ConnectorExists(name)
        return await self._write_config(name, config, initial_state)

    @_serialized
    async def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[bool, ConnectorView]:
        """Create or replace a connector's config; whether it was created."""
        self._require_leader()
        await self.configs.read_to_end()
        created = name not in self.configs.snapshot().connectors
        view = await self._write_config(name, config, TargetState.STARTED if created else None)
        return created, view

    @_serialized
    async def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None]
    ) -> ConnectorView:
        """Merge `patch` into the config; a None value removes that key (KIP-477)."""
        self._require_leader()
        await self.configs.read_to_end()
        current = self.configs.snapshot().connectors.get(name)
        if current is None:
            raise ConnectorNotFound(name)
        merged = {key: value for key, value in {**current, **patch}.items() if value is not None}
        return await self._write_config(name, merged, None)

    async def _write_config(
        self, name: str, config: Mapping[str, str], target_state: TargetState | None
    ) -> ConnectorView:
        if config.get("name", name) != name:
            raise InvalidConnectorConfig(
                f"Connector name configuration ({config['name']}) doesn't match connector "
                f"name in the URL ({name})"
            )
        full = {**config, "name": name}
        others = {n: c for n, c in self.configs.snapshot().connectors.items() if n != name}
        try:
            await asyncio.to_thread(self._plugins.admit, full, others)
        except ValueError as exc:
            raise InvalidConnectorConfig(str(exc)) from exc
        await self.configs.put_connector_config(name, full, target_state)
        await self.configs.read_to_end()
        await self._reconcile_task_configs()
        await self.configs.read_to_end()
        return self.connector(name)

    @_serialized
    async def set_target_state(self, name: str, state: TargetState) -> None:
        """Pause, resume or stop a connector: every worker follows the config topic."""
        self._require_leader()
        await self.configs.read_to_end()
        if name not in self.configs.snapshot().connectors:
            raise ConnectorNotFound(name)
        await self.configs.put_target_state(name, state)
        await self.configs.read_to_end()
        await self._reconcile_task_configs()
        await self.configs.read_to_end()

    @_serialized
    async def restart(self, request: RestartRequest) -> None:
        """Record a restart; the workers that run the work carry it out."""
        self._require_leader()
        await self.configs.read_to_end()
        if request.task is not None:
            self.task_status(ConnectorTaskId(request.connector, request.task))
        elif request.connector not in self.configs.snapshot().connectors:
            raise ConnectorNotFound(request.connector)
        await self.configs.put_restart_request(request)
        await self.configs.read_to_end()

    @_serialized
    async def delete_connector(self, name: str) -> None:
        self._require_leader()
        await self.configs.read_to_end()
        snapshot = self.configs.snapshot()
        if name not in snapshot.connectors:
            raise ConnectorNotFound(name)
        await self.configs.delete_connector(name)
        await self.statuses.delete_connector(name, len(snapshot.task_configs.get(name, ())))
        await self.configs.read_to_end()

    def connector_offsets(self, name: str) -> list[SourceOffset]:
        """What each task's checkpoint says it has committed (KIP-875's GET offsets)."""
        if name not in self.configs.snapshot().connectors:
            raise ConnectorNotFound(name)
        return [
            offset
            for task in self._checkpointed_tasks(name)
            for offset in committed_offsets(self._checkpoint(name, task), task)
        ]

    @_serialized
    async def alter_connector_offsets(
        self, name: str, offsets: Mapping[int, Mapping[int, object | None]]
    ) -> None:
        """`offsets[task][source]`: the end offset to resume after; a task given only None
        offsets is reset. Refused unless the connector is STOPPED and none of its tasks
        still reports RUNNING."""
        await self._require_stopped(name)
        checkpointed = self._checkpointed_tasks(name)
        unknown = sorted(set(offsets) - set(checkpointed))
        if unknown:
            raise InvalidOffsets(
                f"Connector {name} has no task {unknown[0]} with a checkpoint (tasks with "
                f"one: {checkpointed or 'none'}); only a task that has run has offsets"
            )
        for task, by_source in sorted(offsets.items()):
            checkpoint = self._checkpoint(name, task)
            try:
                if all(offset is None for offset in by_source.values()):
                    await asyncio.to_thread(reset_offsets, checkpoint)
                else:
                    await asyncio.to_thread(alter_offsets, checkpoint, by_source)
            except OffsetsError as exc:
                raise InvalidOffsets(f"task {task}: {exc}") from exc
            log.info("altered the offsets of %s task %d: %s", name, task, dict(by_source))

    @_serialized
    async def reset_connector_offsets(self, name: str) -> None:
        await self._require_stopped(name)
        for task in self._checkpointed_tasks(name):
            await asyncio.to_thread(reset_offsets, self._checkpoint(name, task))
        log.info("reset the offsets of %s: its tasks start from their sources' beginning", name)

    async def _require_stopped(self, name: str) -> None:
        self._require_leader()
        await self.configs.read_to_end()
        snapshot = self.configs.snapshot()
        if name not in snapshot.connectors:
            raise ConnectorNotFound(name)
        if snapshot.target_state(name) is not TargetState.STOPPED:
            raise ConnectorNotStopped(name)
        await self.statuses.read_to_end()
        running = sorted(
            task
            for task, status in self.statuses.tasks_of(name).items()
            if status.state in (TaskState.RUNNING, TaskState.RESTARTING)
        )
        if running:
            raise TasksStillRunning(name, running)

    def _checkpoint(self, name: str, task: int) -> Path:
        return checkpoint_dir_for(self._config.checkpoint_root, name, task)

    def _checkpointed_tasks(self, name: str) -> list[int]:
        return checkpointed_tasks(self._config.checkpoint_root, name)

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """Any worker may write this record; every worker, this one included, applies it
        when it reads it. Levels set this way do not survive a restart, as in Connect."""
        await self.configs.put_logger_level(namespace, level)
        await self.configs.read_to_end()

    def _apply_logger_levels(self) -> None:
        """A record this worker refuses (a name or level its REST API would refuse) is
        logged and skipped: any worker, of any version, may have written it."""
        for namespace, level in self.configs.take_logger_levels():
            if self._set_logger_level is None:
                continue
            try:
                self._set_logger_level(namespace, level)
            except ValueError as exc:
                log.warning(
                    "Ignoring the cluster-wide level %r for logger %r: %s", level, namespace, exc
                )

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeader(self.leader_url)


async def _first_of(*events: asyncio.Event) -> None:
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


def _failed_here(status: Status | None, worker_id: str) -> bool:
    return status is not None and status.state is TaskState.FAILED and status.worker_id == worker_id


def _iso_now(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")
