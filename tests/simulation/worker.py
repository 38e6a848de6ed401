"""A simulated worker process: what a sparkherd herder does around each rebalance.

The decisions are the herder's own code: as leader a worker plans with
`herder.leader.LeaderPlanner` (version negotiation, assignor, codec), and every
assignment it receives goes through `herder.apply.apply_assignment`; this module only
carries the decisions out in virtual time. Cooperative: it keeps running everything
until the leader revokes it and rejoins at once after a revocation, or after `delay_ms`.
Eager (the group runs v0): it stops everything before every join. Either way it starts
and stops items only through the ledger. A task handed over in the round that revokes it
(v3, `awaiting_release`) is owned at once but started only when its previous owner has
stopped it (`RunLedger.when_released`); the real worker's bound on that wait, after
which its claim fences the old owner's query, is the runtime's and is not simulated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from herder.apply import apply_assignment
from herder.assignor import Assignor, inherited_deadline
from herder.leader import LeaderPlanner
from herder.membership import JoinedMembers
from protocol.codec import decode_assignment, encode_subscription
from protocol.messages import Allocation, Assignment, Subscription
from protocol.versions import CURRENT_VERSION, EAGER_VERSION
from tests.simulation.config_log import ConfigLog, Item
from tests.simulation.coordinator import (
    GroupCoordinator,
    Heartbeat,
    JoinedGroup,
    Timeouts,
)
from tests.simulation.events import EventLoop, Scheduled
from tests.simulation.ledger import RunLedger


class Rebalancing(Enum):
    EAGER = "eager"
    KIP_415 = "cooperative (KIP-415)"
    IDENTITY_AWARE = "cooperative, identity-aware"

    def version(self, release: int) -> int:
        """The highest protocol version a worker in this mode speaks, in a release whose
        newest version is `release`."""
        return EAGER_VERSION if self is Rebalancing.EAGER else release

    @property
    def identity_aware(self) -> bool:
        return self is Rebalancing.IDENTITY_AWARE


AssignorFactory = Callable[[int | None], Assignor]
"""Makes the assignor of a worker that becomes leader, given the deadline it inherited.
A test's factory makes the assignor for the mode its cluster runs, eager or not."""


@dataclass(frozen=True)
class WorkerEnv:
    loop: EventLoop
    coordinator: GroupCoordinator
    config: ConfigLog
    ledger: RunLedger
    timeouts: Timeouts
    rebalancing: Rebalancing
    max_delay_ms: int
    make_assignor: AssignorFactory | None = None
    """None: the leader planner's own assignors."""


class SimWorker:
    def __init__(self, name: str, env: WorkerEnv, heartbeat_phase_ms: int = 0) -> None:
        """`heartbeat_phase_ms` staggers heartbeats so workers do not all beat in step."""
        self.name = name
        self._heartbeat_phase_ms = heartbeat_phase_ms
        self.url = f"http://{name}:8083"
        self._env = env
        self.rebalancing = env.rebalancing
        """This worker's own mode: a group can mix versions, as during a rolling upgrade."""
        self.release = CURRENT_VERSION
        """The newest version this worker's code knows (an older release: a lower one)."""
        self.alive = False
        self.leaving = False
        self.member_id: str | None = None
        self.joining = False
        self.running: set[Item] = set()
        self.awaiting: set[Item] = set()
        """Owned, not started: handed over in the round that revokes them elsewhere."""
        self.config_offset = 0
        self.version = self.max_version
        """The version of the next subscription; only an assignment changes it."""
        self.group_version = self.max_version
        self._planner: LeaderPlanner | None = None
        self._led_generation: int | None = None
        self._last_assignment: tuple[Assignment, int] | None = None
        self.runs = 0
        """Process starts so far; the coordinator reaches only the current one."""
        self._rejoin: Scheduled | None = None
        self._heartbeat: Scheduled | None = None

    @property
    def max_version(self) -> int:
        return self.rebalancing.version(self.release)

    def start(self) -> None:
        """A fresh process: nothing running, no member id, no leader memory."""
        self.alive = True
        self.runs += 1
        self.leaving = False
        self.member_id = None
        self.version = self.group_version = self.max_version
        self._planner = None
        self._led_generation = None
        self._last_assignment = None
        self.read_config(self._env.config.end)
        self.join()
        loop = self._env.loop
        self._heartbeat = loop.call_at(
            loop.now_ms + self._heartbeat_phase_ms + 1, self._beat, activity=False
        )

    def crash(self) -> None:
        self._halt("crash")

    def shut_down(self) -> None:
        """Graceful stop: stop every item, then leave the group (as Connect does)."""
        member_id = self.member_id
        self._halt("shutdown")
        if member_id is not None:
            self._env.coordinator.leave(member_id)

    def retire(self) -> None:
        """Announce a departure for good; leave once the group took all work away."""
        if self.max_version == EAGER_VERSION:
            self.shut_down()
            return
        self.leaving = True
        self.join()

    def read_config(self, offset: int) -> None:
        """The config reader delivered records up to `offset`; new records need a rebalance."""
        if not self.alive or offset <= self.config_offset:
            return
        config = self._env.config
        changed = config.task_counts(self.config_offset) != config.task_counts(offset)
        self.config_offset = offset
        if changed and self.member_id is not None and not self.joining:
            self.join()

    def _read_up_to(self, offset: int) -> None:
        """A blocking read the herder does before acting on an assignment: no rejoin."""
        self.config_offset = max(self.config_offset, offset)

    def join(self) -> None:
        if not self.alive:
            return
        self._env.loop.cancel(self._rejoin)
        if self.group_version == EAGER_VERSION:
            self._stop_all("rejoin")
        link = _ProcessRun(self)
        self.member_id = self._env.coordinator.join(link, self.member_id, self._subscription())
        self.joining = True

    def lead(self, group: JoinedGroup) -> dict[str, Assignment] | None:
        """The herder's leader step on the wire's bytes. Like the herder, a worker keeps
        its planner only while it leads consecutive generations."""
        if self._planner is None or self._led_generation != group.generation - 1:
            self._planner = self._fresh_planner()
        self._led_generation = group.generation
        members = JoinedMembers(
            generation=group.generation,
            leader_id=group.leader_id,
            metadata={m: encode_subscription(s) for m, s in group.members.items()},
            instance_ids={m: s.instance_id for m, s in group.members.items()},
        )
        encoded = self._planner.plan(
            members,
            leader_url=self.url,
            snapshot=self._env.config.snapshot(self.config_offset),
            now_ms=self._env.loop.now_ms,
        )
        return {member: decode_assignment(data) for member, data in encoded.items()}

    def on_sync(self, generation: int, assignment: Assignment) -> None:
        """Carry out the herder's decision; a config offset behind the leader's is caught
        up by a blocking read, a reader found ahead of it needs another round."""
        self.joining = False
        loop = self._env.loop
        self._last_assignment = (assignment, loop.now_ms)
        step = apply_assignment(assignment, self._owned(), self.version, self.max_version)
        self.version = step.version
        if step.catch_up:
            self._read_up_to(self._env.config.end)
        if step.accepted:
            self._read_up_to(assignment.config_offset)
        if step.group_version is not None:
            self.group_version = step.group_version
        for item in _items(step.stop):
            self._stop(item, "revoked")
        for item in _items(step.start):
            if item in step.await_release.tasks:
                self.awaiting.add(item)
                self._env.ledger.when_released(item, self.name, self._start_released)
            else:
                self.running.add(item)
                self._env.ledger.start(item, self.name)
        if step.rejoin or (step.accepted and self.config_offset > assignment.config_offset):
            self._rejoin = loop.call_soon(self.join)
        elif self.leaving and self._owned().is_empty():
            self.shut_down()
        elif step.delay_ms > 0:
            self._rejoin = loop.call_at(loop.now_ms + step.delay_ms, self.join)

    def on_sync_failed(self, generation: int) -> None:
        if self._led_generation == generation and self._planner is not None:
            self._planner.forget()
        self.joining = False
        self._rejoin = self._env.loop.call_soon(self.join)

    def _fresh_planner(self) -> LeaderPlanner:
        """A new leader inherits the scheduled rebalance it knew of as a follower."""
        make = self._env.make_assignor
        return LeaderPlanner(
            leader_max_version=self.max_version,
            max_delay_ms=self._env.max_delay_ms,
            identity_aware=self.rebalancing.identity_aware,
            inherited_deadline_ms=(
                inherited_deadline(*self._last_assignment) if self._last_assignment else None
            ),
            make_assignor=None if make is None else lambda _cooperative, deadline: make(deadline),
        )

    def _subscription(self) -> Subscription:
        return Subscription(
            version=self.version,
            max_version=self.max_version,
            worker_id=self.name,
            url=self.url,
            config_offset=self.config_offset,
            allocation=self._owned(),
            leaving=self.leaving,
        )

    def _owned(self) -> Allocation:
        return _allocation(self.running | self.awaiting)

    def _start_released(self, item: Item) -> None:
        self.awaiting.discard(item)
        self.running.add(item)
        self._env.ledger.start(item, self.name)

    def _schedule_heartbeat(self) -> None:
        loop = self._env.loop
        self._heartbeat = loop.call_at(
            loop.now_ms + self._env.timeouts.heartbeat_interval_ms, self._beat, activity=False
        )

    def _beat(self) -> None:
        if not self.alive:
            return
        if self.member_id is not None:
            answer = self._env.coordinator.heartbeat(self.member_id)
            if answer is Heartbeat.UNKNOWN:
                self._stop_all("expelled")
                self.member_id = None
                self.join()
            elif answer is Heartbeat.REBALANCE:
                self.join()
        self._schedule_heartbeat()

    def _halt(self, cause: str) -> None:
        self._stop_all(cause)
        self.alive = False
        self.joining = False
        self.member_id = None
        self._env.loop.cancel(self._rejoin)
        self._env.loop.cancel(self._heartbeat)

    def _stop_all(self, cause: str) -> None:
        for item in sorted(self.running | self.awaiting, key=str):
            self._stop(item, cause)

    def _stop(self, item: Item, cause: str) -> None:
        if item in self.awaiting:
            self.awaiting.discard(item)
            self._env.ledger.forget_waiter(item, self.name)
            return
        self.running.discard(item)
        self._env.ledger.stop(item, self.name, cause)


class _ProcessRun:
    """The coordinator's link to one run of a worker process. A member that an earlier
    run joined with stays in the group until its session expires, and what the
    coordinator tells it reaches no one, as for a real process that restarted: it never
    leads for the new run, nor do its assignments land there."""

    def __init__(self, worker: SimWorker) -> None:
        self.name = worker.name
        self._worker = worker
        self._run = worker.runs

    def lead(self, group: JoinedGroup) -> dict[str, Assignment] | None:
        return self._worker.lead(group) if self._current() else None

    def on_sync(self, generation: int, assignment: Assignment) -> None:
        if self._current():
            self._worker.on_sync(generation, assignment)

    def on_sync_failed(self, generation: int) -> None:
        if self._current():
            self._worker.on_sync_failed(generation)

    def _current(self) -> bool:
        return self._worker.alive and self._worker.runs == self._run


def _allocation(items: set[Item]) -> Allocation:
    return Allocation.of(
        (i for i in items if isinstance(i, str)), (i for i in items if not isinstance(i, str))
    )


def _items(allocation: Allocation) -> list[Item]:
    found: list[Item] = sorted(allocation.connectors)
    found.extend(sorted(allocation.tasks))
    return found
