"""The group loop of one worker: join -> apply the assignment -> heartbeat until something
asks for a rebalance, forever.

Cooperative rules (KIP-415): work is stopped only when the leader revokes it, and a worker
that stopped something rejoins at once so the leader can hand it on in the next
generation. Between rebalances the loop also follows the config topic and runs the REST
requests waiting in the herder's queue, so neither interleaves with the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable, Mapping

from herder.apply import apply_assignment
from herder.assignor import inherited_deadline
from herder.cancellation import cancel_and_wait
from herder.config_store import ConfigStore
from herder.leader import LeaderPlanner
from herder.membership import (
    TROUBLED_AFTER_ROUNDS,
    CoordinatorUnavailable,
    Generation,
    HeartbeatOutcome,
    JoinedMembers,
    Membership,
)
from herder.metrics import RebalanceStats
from herder.requests import RequestQueue
from herder.settings import HerderSettings
from herder.task_configs import TaskConfigWriter
from herder.views import WorkerState
from herder.work import LocalWork
from protocol import ProtocolError
from protocol.codec import decode_assignment, encode_subscription
from protocol.messages import EMPTY_ALLOCATION, Allocation, Assignment, Subscription
from protocol.versions import EAGER_VERSION, max_version_for, parse_connect_protocol

log = logging.getLogger(__name__)

CATCH_UP_ATTEMPTS = 3
"""Failed config catch-ups in a row after which a worker stops its work."""
FENCE_CHECK_INTERVAL_S = 0.5
STATIC_PROBE_TIMEOUT_S = 60.0
"""Two rounds in a group of one: well under a second on Apache Kafka, 5-20 s on Tansu."""


class GroupLoop:
    """This worker's membership in the group, and what it does about each generation."""

    def __init__(
        self,
        settings: HerderSettings,
        member: Membership,
        configs: ConfigStore,
        work: LocalWork,
        task_configs: TaskConfigWriter,
        requests: RequestQueue,
        clock: Callable[[], float],
        new_token: Callable[[], str] = lambda: secrets.token_hex(8),
    ) -> None:
        self._settings = settings
        self._incarnation = new_token()
        self._member = member
        self.configs = configs
        self._work = work
        self._task_configs = task_configs
        self._requests = requests
        self._clock = clock
        self._max_version = max_version_for(parse_connect_protocol(settings.connect_protocol))
        self._version = self._max_version
        self.group_version = self._max_version
        self._planner: LeaderPlanner | None = None
        self._generation: Generation | None = None
        self._applied_generation = -1
        self._joined_with = b""
        self._static_rejoin_forced = False
        self._last_assignment: tuple[Assignment, int] | None = None
        self._leaving = False
        self._warming = False
        self._starting_since: float | None = None
        """When `run` began, until the worker first turned ready."""
        self._warm_up_took = "no warm-up"
        self.rebalances = RebalanceStats()
        self.hand_offs = 0
        self.self_fencings = 0
        self.members_led = 0
        """How many members the last round this worker led had (0: it has led none)."""
        self.leader_url: str | None = None
        self._configured_at_join: Allocation = EMPTY_ALLOCATION
        self._rejoin = asyncio.Event()
        self._assignment_applied = asyncio.Event()
        self.config_changed = asyncio.Event()
        self._rejoin_at: float | None = None
        self._catch_up_failures = 0
        self._fenced = False
        self._heartbeat_task: asyncio.Task[None] | None = None
        self.ready = False
        self.unhealthy: str | None = None
        """Why a worker that was ready is not any more (None while starting or ready)."""

    @property
    def worker_id(self) -> str:
        return self._settings.worker_id

    @property
    def owned(self) -> Allocation:
        return self._work.owned

    @property
    def generation(self) -> int:
        return self._generation.generation if self._generation else -1

    @property
    def is_leader(self) -> bool:
        return self._generation is not None and self._generation.is_leader

    @property
    def state(self) -> WorkerState:
        if self._warming:
            return WorkerState.WARMING
        if self._leaving:
            return WorkerState.LEAVING
        if self.ready and self.round_trouble is None:
            return WorkerState.RUNNING
        if self.unhealthy is not None or self.round_trouble is not None:
            return WorkerState.UNHEALTHY
        return WorkerState.JOINING

    @property
    def failed_rounds(self) -> int:
        return self._member.failed_rounds

    @property
    def round_trouble(self) -> str | None:
        """Why the group cannot settle, once `TROUBLED_AFTER_ROUNDS` rounds in a row failed
        (for `/health`): a worker in such a loop runs its work but cannot take on more."""
        failing = self._member.failing_rounds
        if failing < TROUBLED_AFTER_ROUNDS:
            return None
        return (
            f"the group has failed {failing} rebalance rounds in a row (last: "
            f"{self._member.last_round_error}); retrying with back-off"
        )

    def scheduled_rebalance_s(self) -> float:
        """How long until the leader's scheduled rebalance (0: none pending)."""
        return 0.0 if self._rejoin_at is None else max(0.0, self._rejoin_at - self._clock())

    async def stop(self) -> None:
        self.ready = False
        self.unhealthy = "the worker is shutting down"
        await cancel_and_wait(self._heartbeat_task)

    async def leave_for_good(self, timeout_s: float) -> bool:
        """Announce that this worker is going away for good (scale-down); whether it ran
        nothing any more within `timeout_s`.

        The leader revokes all work of a leaving member at once and places it elsewhere in
        the next round, so it moves without waiting for `scheduled.rebalance.max.delay.ms`.
        The worker stays a member, running nothing, until it is stopped. A leader also
        waits for that next round, which it leads: gone before it, it would leave its work
        unplaced until its session expired (11 s of a bounced leader's tasks' 12.5 s gap).
        """
        announced_in = self._applied_generation
        if not self._leaving:
            self.hand_offs += 1
        self._leaving = True
        self._rejoin.set()
        try:
            async with asyncio.timeout(timeout_s):
                while self._applied_generation <= announced_in or not self.owned.is_empty():
                    await self._next_assignment()
                released_in = self._applied_generation
                while self.is_leader and self._applied_generation <= released_in:
                    await self._next_assignment()
        except TimeoutError:
            return False
        return True

    async def _next_assignment(self) -> None:
        self._assignment_applied.clear()
        await self._assignment_applied.wait()

    async def run(self) -> None:
        self._starting_since = self._clock()
        await asyncio.gather(self._warm_up(), self._check_static_membership())
        while True:
            self._rejoin.clear()
            self.config_changed.clear()
            self._fenced = False
            if self.group_version == EAGER_VERSION:
                await self._work.stop_all()
            self.rebalances.begin(self._clock())
            try:
                generation = await self._member.join(
                    self._subscribe, self._on_leader, self._forget_leader_round
                )
            except CoordinatorUnavailable as exc:
                log.warning("%s; retrying", exc)
                continue
            except TimeoutError:
                await self._config_unreadable()
                continue
            if await self._rebalance_was_skipped(generation):
                continue
            self._generation = generation
            if self._fenced:
                log.info("fenced while joining; rejoining to report that I run nothing")
                self._fenced = False
                continue
            self._heartbeat_task = asyncio.create_task(self._heartbeat(), name="heartbeat")
            try:
                await self._apply(generation)
                self.rebalances.end(self._clock())
                self._assignment_applied.set()
                await self._work.follow_config(self.configs.snapshot())
                self._catch_up_failures = 0
                await self._until_rejoin_needed()
            except TimeoutError:
                await self._config_unreadable()
            finally:
                await cancel_and_wait(self._heartbeat_task)

    async def _warm_up(self) -> None:
        """Start Spark before joining: work the group hands this worker (its own tasks
        back after a restart, say) then starts at once instead of after Spark's start-up,
        on CPUs the other workers keep busy. A runtime that cannot start is no reason to
        stay out of the group: the tasks it is given report the cause as FAILED."""
        if not self._settings.warm_up:
            return
        self._warming = True
        began = self._clock()
        try:
            await self._work.warm_up()
        except Exception:
            log.exception("warming up failed; joining the group anyway")
            self._warm_up_took = f"warm-up failed after {self._clock() - began:.1f} s"
        else:
            log.info("warm after %.1f s; joining the group", self._clock() - began)
            self._warm_up_took = f"warm-up {self._clock() - began:.1f} s"
        finally:
            self._warming = False

    async def _check_static_membership(self) -> None:
        """Before the first join (during the warm-up, which takes longer): a static member
        on a broker that does not rebalance on its changed subscription joins without
        `group.instance.id` from the start. Found out only when a subscription changed,
        the switch came in the middle of a hand-off, whose rounds then outlasted its
        bound, and a worker restarted under the same identity after the switch left the
        group answering every SyncGroup with error 27. A probe that cannot finish keeps
        the member static (`_rebalance_was_skipped` still notices later)."""
        if not self._member.is_static:
            return
        try:
            async with asyncio.timeout(STATIC_PROBE_TIMEOUT_S):
                honoured = await self._member.static_rejoin_honoured()
        except Exception as exc:  # a probe is advice: never a reason not to join
            log.warning("could not probe the broker's static membership (%r)", exc)
            return
        if not honoured:
            log.warning(
                "the broker does not rebalance when a static member's subscription changes "
                "(Tansu's partial KIP-345): this worker joins without group.instance.id (the "
                "assignor still knows it by %r)",
                self._settings.group_instance_id,
            )
            self._member.join_as_dynamic()

    async def _rebalance_was_skipped(self, generation: Generation) -> bool:
        """Whether the coordinator answered without the rebalance this worker needs, in
        which case it leaves and rejoins to force one (and the caller joins again).

        Two cases, both KIP-345 static membership (`group.instance.id`) by its letter:

        * A process's first join as a static member, unless the assignment names this
          run (`Subscription.incarnation`, v3). Apache Kafka hands a static member that
          rejoins a stable group the generation and the assignment its predecessor had,
          without a rebalance. An incremental cooperative assignment is a change
          (assigned, revoked) that this new process never saw: it would run nothing
          while the leader believes it runs its tasks. After a rebalance, the leader
          sees what it runs (nothing) under its identity and hands its own tasks back at
          once. An assignment made for this run needs no such round: in a rolling
          bounce it is the one that hands the worker its own tasks back, and discarding
          it cost them a second round (4 s of a 5.9 s gap).
        * Tansu answers a changed subscription of a running static member with the
          current generation, so the change (new work, revocations done) would never
          reach the leader.
        """
        first_static_join = (
            self._member.is_static
            and self._applied_generation < 0
            and not answers_run(generation.assignment, self._incarnation)
        )
        subscription_ignored = (
            generation.generation == self._applied_generation
            and generation.subscription != self._joined_with
        )
        if not (first_static_join or subscription_ignored) or self._static_rejoin_forced:
            self._joined_with = generation.subscription
            self._static_rejoin_forced = False
            return False
        log.info(
            "generation %d may not reflect what this worker runs (%s); leaving and rejoining "
            "to force a rebalance",
            generation.generation,
            "first join as a static member" if first_static_join else "subscription ignored",
        )
        if subscription_ignored and self._member.is_static:
            log.warning(
                "the broker answered a changed subscription of this static member without a "
                "rebalance (Tansu's partial KIP-345 does): every later change would need a "
                "forced round, and rounds forced in turn kept a group from settling, so this "
                "worker joins without group.instance.id from now on (the assignor still knows "
                "it by %r)",
                self._settings.group_instance_id,
            )
            self._member.join_as_dynamic()
        self._static_rejoin_forced = True
        await self._member.leave()
        return True

    async def _subscribe(self) -> bytes:
        """For each JoinGroup: what this worker runs now. Tasks another worker has
        claimed meanwhile are given up first, so the subscription never reports them:
        a worker thawed in the middle of a join retried it with the tasks it had owned
        when it froze, and the leader stopped their live copies to hand them "back"."""
        await self._work.give_up_lost()
        snapshot = self.configs.snapshot()
        self._configured_at_join = snapshot.configured()
        return encode_subscription(
            Subscription(
                version=self._version,
                max_version=self._max_version,
                worker_id=self.worker_id,
                url=self._settings.rest_url,
                config_offset=snapshot.offset,
                allocation=self.owned,
                instance_id=self._settings.group_instance_id,
                leaving=self._leaving,
                incarnation=self._incarnation,
            )
        )

    async def _on_leader(self, members: JoinedMembers) -> Mapping[str, bytes]:
        self.members_led = len(members.metadata)
        await self.configs.read_to_end()
        await self._task_configs.reconcile()
        await self.configs.read_to_end()
        if self._planner is None:
            inherited = (
                inherited_deadline(*self._last_assignment) if self._last_assignment else None
            )
            self._planner = LeaderPlanner(
                leader_max_version=self._max_version,
                max_delay_ms=self._settings.scheduled_rebalance_max_delay_ms,
                inherited_deadline_ms=inherited,
            )
        assignments = self._planner.plan(
            members,
            leader_url=self._settings.rest_url,
            snapshot=self.configs.snapshot(),
            now_ms=int(self._clock() * 1000),
        )
        for identity, handed in sorted(self._planner.hand_over_changes.items()):
            await self.configs.put_handed_over(identity, handed)
        return assignments

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
            "joined generation %d as %s (v%d): assigned %d (%d awaiting release), revoked %d, "
            "delay %d ms%s",
            generation.generation,
            "leader" if generation.is_leader else "follower",
            assignment.version,
            assignment.assigned.size(),
            assignment.awaiting_release.size(),
            assignment.revoked.size(),
            assignment.delay_ms,
            f", error {assignment.error.name}" if assignment.failed else "",
        )
        step = apply_assignment(assignment, self.owned, self._version, self._max_version)
        if step.version != self._version:
            log.info("protocol version %d -> %d; rejoining", self._version, step.version)
            self._version = step.version
        if step.catch_up:
            log.info("config offset behind the leader's; catching up before rejoining")
            await self.configs.read_to_end()
        if step.group_version is not None:
            self.group_version = step.group_version
        await self._work.stop(step.stop)
        if step.rejoin:
            self._rejoin.set()
        if not step.accepted:
            return
        self._work.start(step.start, step.await_release)
        if self._planner is not None:
            self._work.mark_unassigned(self._planner.unplaced)
        self._rejoin_at = self._clock() + step.delay_ms / 1000 if step.delay_ms > 0 else None
        await self.configs.read_to_end()
        if not self.ready:
            self._log_turning_ready()
        self.ready = True
        self.unhealthy = None
        log.info(
            "generation %d: leader %s, running %d connectors and %d tasks",
            generation.generation,
            self.leader_url,
            len(self.owned.connectors),
            len(self.owned.tasks),
        )

    def _log_turning_ready(self) -> None:
        """One line as `/health` turns 200: a request sent as the REST server starts waits
        for the warm-up and the join (tens of seconds), and the log should say when it
        may be sent, and where the time went."""
        if self._starting_since is None:
            log.info("ready again: /health answers 200 (it was: %s)", self.unhealthy)
            return
        log.info(
            "ready: /health answers 200, %.1f s after start (%s)",
            self._clock() - self._starting_since,
            self._warm_up_took,
        )
        self._starting_since = None

    async def _until_rejoin_needed(self) -> None:
        """Between rebalances: the scheduled rebalance, config changes and REST requests,
        in that order, each to its end before the next."""
        while not self._rejoin.is_set():
            timeout = self._settings.heartbeat_interval_ms / 1000
            if self._rejoin_at is not None:
                timeout = min(timeout, max(0.0, self._rejoin_at - self._clock()))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await _first_of(
                        self._rejoin,
                        self.config_changed,
                        self._requests.arrived,
                        self._work.claimed_elsewhere,
                    )
            if self._work.claimed_elsewhere.is_set():
                log.info("another worker has claimed a task of mine; rejoining to give it up")
                self._rejoin.set()
            if self._rejoin_at is not None and self._clock() >= self._rejoin_at:
                self._rejoin_at = None
                await self._scheduled_rebalance()
            if self.config_changed.is_set():
                self.config_changed.clear()
                await self._on_config_change()
            if self.is_leader:
                await self._task_configs.refresh_due()
            if not self._rejoin.is_set():
                await self._requests.run_pending()

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
            await self._work.stop_all()
        await asyncio.sleep(min(30.0, 2.0**self._catch_up_failures))

    async def fence_when_out_of_touch(self) -> None:
        """Stop all work before the coordinator can have given it to another worker.

        A worker that cannot reach the coordinator (or whose rejoin outlasts the rebalance
        time-out) is no longer a member as far as the group knows; its tasks may already
        be assigned elsewhere, so it stops them on its own (Kafka's KAFKA-9184). With or
        without work it is no longer ready: `/health` turns 500 until it has rejoined.
        """
        margin_s = self._settings.heartbeat_interval_ms / 1000
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
                self.self_fencings += 1
                self._fenced = True
                await self._work.stop_all()
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
        joined_at = self._clock()
        while True:
            await asyncio.sleep(
                heartbeat_pause_s(self._clock() - joined_at, self._settings.heartbeat_interval_ms)
            )
            outcome = await self._member.heartbeat()
            if outcome is HeartbeatOutcome.MEMBER_LOST:
                log.warning("lost group membership; stopping all work before rejoining")
                await self._work.stop_all()
            if outcome is not HeartbeatOutcome.OK:
                self._rejoin.set()
                return

    async def _on_config_change(self) -> None:
        """New or removed work needs a rebalance first; restarting reconfigured tasks waits
        until after it, so a worker busy starting Spark queries does not miss the round."""
        if self.is_leader:
            await self._task_configs.reconcile()
        snapshot = self.configs.snapshot()
        if snapshot.configured() != self._configured_at_join:
            self._work.follow_target_states(snapshot)
            self._rejoin.set()
            return
        await self._work.follow_config(snapshot)


def answers_run(assignment: bytes, incarnation: str) -> bool:
    """Whether an assignment was made for the subscription of this run of the process."""
    try:
        return decode_assignment(assignment).incarnation == incarnation
    except ProtocolError:
        return False


FOLLOW_UP_WINDOW_S = 10.0
FOLLOW_UP_HEARTBEAT_S = 0.2


def heartbeat_pause_s(since_join_s: float, heartbeat_interval_ms: int) -> float:
    """How long to wait before the next heartbeat, `since_join_s` after a rebalance.

    A cooperative rebalance that moves work is two rounds: the owners stop what was
    revoked and rejoin at once, and the others hear of the second round only from a
    heartbeat. Work handed over is stopped until that round, so right after a rebalance
    a member asks often (a few requests a second, for a few seconds); afterwards, every
    `heartbeat.interval.ms`.
    """
    interval_s = heartbeat_interval_ms / 1000
    if since_join_s < FOLLOW_UP_WINDOW_S:
        return min(interval_s, FOLLOW_UP_HEARTBEAT_S)
    return interval_s


async def _first_of(*events: asyncio.Event) -> None:
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
