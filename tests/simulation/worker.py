"""A simulated worker process: a sparkherd herder's decisions, carried out in virtual time.

The decisions are the herder's own code: the member lifecycle is `herder.member.lifecycle`
(which applies every assignment with `herder.member.apply.apply_assignment`), and as leader a
worker plans with `herder.member.leader.LeaderPlanner` (version negotiation, assignor, codec).
This module feeds the lifecycle its events (a join's answer, a heartbeat's, a config
record read, time passing, a departure) and carries its commands out in virtual time:
it starts and stops items only through the ledger, each task through the worker's own
task machine (`tests.simulation.task_phases`). The member protocol below the
lifecycle (a JoinGroup resent when its SyncGroup fails, as `GroupMember.join` retries)
is the simulator's own. A task handed over in the round that revokes it (v3,
`awaiting_release`) is owned at once but started only when its previous owner has
stopped it (`RunLedger.when_released`); the real worker's bound on that wait, after
which its claim fences the old owner's query, is the runtime's and is not simulated.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import partial

from herder.assignor import Assignor, inherited_deadline
from herder.member import lifecycle_messages as do
from herder.member.leader import LeaderPlanner
from herder.member.lifecycle import Lifecycle
from herder.member.lifecycle_messages import (
    ConfigChanged,
    Event,
    HeartbeatAnswered,
    Joined,
    LeaveRequested,
    StepDone,
    Tick,
)
from herder.member.member_states import LifecycleSettings, MemberReport, first_report
from herder.member.membership import Generation, HeartbeatOutcome, JoinedMembers
from protocol.codec import decode_assignment, encode_assignment, encode_subscription
from protocol.connector_table import subscription_table
from protocol.messages import NO_LOAD, OVERLOADED_LOAD, Allocation, Assignment, Subscription
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
from tests.simulation.task_phases import SimTasks


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

HEARTBEAT_ANSWERS = {
    Heartbeat.REBALANCE: HeartbeatOutcome.REJOIN,
    Heartbeat.UNKNOWN: HeartbeatOutcome.MEMBER_LOST,
}


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
        self.capacity: int | None = None
        """How many tasks its driver runs on cadence (None: it measures no load)."""
        self.alive = False
        self.member_id: str | None = None
        self.joining = False
        self.running: set[Item] = set()
        self.awaiting: set[Item] = set()
        """Owned, not started: handed over in the round that revokes them elsewhere."""
        self.tasks = SimTasks(name, env.ledger, self.running, self.awaiting)
        self.config_offset = 0
        self._configured_at_join: dict[str, int] = {}
        self._lifecycle, self._report = self._new_lifecycle()
        self._events: deque[Event] = deque()
        self._deciding = False
        self._planner: LeaderPlanner | None = None
        self._led_generation: int | None = None
        self._last_assignment: tuple[Assignment, int] | None = None
        self.runs = 0
        """Process starts so far; the coordinator reaches only the current one."""
        self._retry: Scheduled | None = None
        self._wake: Scheduled | None = None
        self._heartbeat: Scheduled | None = None

    @property
    def max_version(self) -> int:
        return self.rebalancing.version(self.release)

    @property
    def version(self) -> int:
        """The version of the next subscription; only an assignment changes it."""
        return self._report.version

    @property
    def group_version(self) -> int:
        return self._report.group_version

    @property
    def leaving(self) -> bool:
        return self._report.leaving

    def start(self) -> None:
        """A fresh process: nothing running, no member id, no leader memory."""
        self.alive = True
        self.runs += 1
        self.member_id = None
        self._lifecycle, self._report = self._new_lifecycle()
        self._events.clear()
        self._planner = None
        self._led_generation = None
        self._last_assignment = None
        self.config_offset = self._env.config.end
        self._decide(self._lifecycle.start())
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
        """Announce a departure for good; leave once the group took all work away. An
        eager worker has no way to announce it (`DistributedHerder.hand_off_refusal`)."""
        if self.max_version == EAGER_VERSION:
            self.shut_down()
            return
        self._post(LeaveRequested())

    def read_config(self, offset: int) -> None:
        """The config reader delivered records up to `offset`."""
        if not self.alive or offset <= self.config_offset:
            return
        self.config_offset = offset
        self._post(ConfigChanged())

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
        self.joining = False
        member_id = self.member_id or ""
        leader = self._env.coordinator.leader_id or ""
        joined = Generation(generation, member_id, leader, encode_assignment(assignment))
        self._post(Joined(joined, self._owned(), self._env.loop.now_ms))

    def on_sync_failed(self, generation: int) -> None:
        """The member protocol's retry: the join goes on with a new JoinGroup."""
        if self._led_generation == generation and self._planner is not None:
            self._planner.forget()
        self._retry = self._env.loop.call_soon(self._send_join)

    # -- the lifecycle's interpreter -------------------------------------------------------

    def _new_lifecycle(self) -> tuple[Lifecycle, MemberReport]:
        """A machine, and what it shows before it says anything (`Report` updates it)."""
        incarnation = f"{self.name}#{getattr(self, 'runs', 0)}"
        settings = LifecycleSettings(incarnation, self.max_version, static=False)
        return Lifecycle(settings), first_report(settings)

    def _post(self, event: Event) -> None:
        """Events are handled one at a time, in order, as the herder's queue does."""
        if not self.alive:
            return
        self._events.append(event)
        if self._deciding:
            return
        self._deciding = True
        try:
            while self._events and self.alive:
                self._decide(self._lifecycle.handle(self._events.popleft()))
        finally:
            self._deciding = False

    def _decide(self, decision: do.Decision) -> None:
        for command in decision.now:
            self._execute(command)
        if decision.step is None or not self.alive:
            return
        for command in decision.step:
            self._execute(command)
        if not any(isinstance(c, do.Join | do.Pause) for c in decision.step):
            self._post(StepDone(self._owned(), self._work_changed()))

    def _execute(self, command: do.Command) -> None:
        match command:
            case do.Join():  # a JoinGroup goes out after what this instant delivers
                self._retry = self._env.loop.call_soon(self._send_join)
            case do.Leave():
                if self.member_id is not None:
                    self._env.coordinator.leave(self.member_id)
                self.member_id = None
            case do.Announce(_, assignment) if assignment is not None:
                self._last_assignment = (assignment, self._env.loop.now_ms)
            case do.StopWork(allocation):
                for item in _items(allocation):
                    self._stop(item, "revoked")
            case do.StartWork(allocation, await_release):
                for item in _items(allocation):
                    self._start(item, awaiting=item in await_release.tasks)
            case do.StopAllWork(why):
                self._stop_all("rejoin" if why is do.StopWhy.EAGER else "expelled")
            case do.ReadConfigToEnd():
                self.read_config(self._env.config.end)
            case do.WakeAt(at_ms):
                self._env.loop.cancel(self._wake)
                if at_ms is not None:
                    self._wake = self._env.loop.call_at(at_ms, self._tick)
            case do.Pause(seconds):
                done = partial(self._post, StepDone(self._owned(), self._work_changed()))
                self._env.loop.call_at(self._env.loop.now_ms + int(seconds * 1000), done)
            case do.HandOffDone():
                self.shut_down()
            case do.Report(report):
                self._report = report
            case _:
                pass  # nothing to do in the simulator: logs, task configs, REST requests

    def _send_join(self) -> None:
        if not self.alive:
            return
        self._env.loop.cancel(self._retry)
        self._configured_at_join = self._env.config.task_counts(self.config_offset)
        link = _ProcessRun(self)
        self.member_id = self._env.coordinator.join(link, self.member_id, self._subscription())
        self.joining = True

    def _tick(self) -> None:
        self._post(Tick(self._env.loop.now_ms))

    def _work_changed(self) -> bool:
        return self._env.config.task_counts(self.config_offset) != self._configured_at_join

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
            connector_table=subscription_table(
                self._env.config.snapshot(self.config_offset).connectors,
                self.version,
                self.group_version,
            ),
            load=simulated_load(len(self._owned().tasks), self.capacity),
        )

    def _owned(self) -> Allocation:
        return _allocation(self.running | self.awaiting)

    def _start(self, item: Item, *, awaiting: bool) -> None:
        if isinstance(item, str):
            self.running.add(item)
            self._env.ledger.start(item, self.name)
        else:
            self.tasks.assign(item, awaiting=awaiting)

    def _schedule_heartbeat(self) -> None:
        loop = self._env.loop
        self._heartbeat = loop.call_at(
            loop.now_ms + self._env.timeouts.heartbeat_interval_ms, self._beat, activity=False
        )

    def _beat(self) -> None:
        """A joining member's JoinGroup keeps its session (the beat here stands in for
        it); a rebalance it missed makes the member protocol send its JoinGroup again."""
        if not self.alive:
            return
        if self.member_id is not None:
            answer = self._env.coordinator.heartbeat(self.member_id)
            if answer is Heartbeat.UNKNOWN:
                self.member_id = None
            if answer is not Heartbeat.OK and self.joining:
                self._send_join()
            elif answer is not Heartbeat.OK:
                self._post(HeartbeatAnswered(HEARTBEAT_ANSWERS[answer]))
        self._schedule_heartbeat()

    def _halt(self, cause: str) -> None:
        self._stop_all(cause)
        self.alive = False
        self.joining = False
        self.member_id = None
        for scheduled in (self._retry, self._wake, self._heartbeat):
            self._env.loop.cancel(scheduled)

    def _stop_all(self, cause: str) -> None:
        for item in sorted(self.running | self.awaiting, key=str):
            self._stop(item, cause)

    def _stop(self, item: Item, cause: str) -> None:
        if isinstance(item, str):
            self.running.discard(item)
            self._env.ledger.stop(item, self.name, cause)
        else:
            self.tasks.revoke(item, cause)


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


def simulated_load(tasks: int, capacity: int | None) -> int:
    """What a worker whose driver runs `capacity` tasks on cadence reports running `tasks`
    (`worker.driver_load`'s figure): overloaded past its capacity, else its used share."""
    if capacity is None:
        return NO_LOAD
    if tasks > capacity:
        return OVERLOADED_LOAD + tasks - capacity
    return min(OVERLOADED_LOAD - 1, tasks * 1000 // max(capacity, 1))
