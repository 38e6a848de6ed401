"""A worker's life in the group as one state machine: events in, commands out, no I/O.

Everything that changes where a worker stands (a join's answer, a heartbeat's, the
watchdog, a config change, a scale-down, the scheduled rebalance, a config topic that
cannot be read, the shutdown) arrives here as an event, and what to do about it leaves
as commands (`herder.member.lifecycle_messages`); the machine reads no clock (times come in
events) and does nothing itself. `herder.member.group_loop.GroupLoop` carries the commands out
on Kafka and Spark, the simulator in tests/simulation in virtual time: both run this code.

`TRANSITIONS` is the table: each (state, event) pair it names has rows, tried in order,
of a guard (`When`), the next state and an action (`herder.member.lifecycle_actions`) that gives
the commands. The next state is the row's: an action never sets it. A row may stay
(`Next.STAY`: what arrives during a step is remembered as a chore, or done at once, e.g.
a fence stops the work while a join is under way) or go to the next chore
(`Next.CHORE`), which `CHORES` chooses: the first of its rows whose chore is pending.
`IGNORED` names the pairs stale by rule; any other pair is a bug in the caller.

The state is `MemberState`, one value per step the loop can be running (its own work
runs one step at a time: prepare, join, carry an assignment out, one chore, a back-off),
with what changes how the member reacts folded in: a join after a forced round, a join
fenced meanwhile, an assignment taken or declined. The rest is data (`MemberData`): it
changes no row, only what an action says. The heartbeat runs in the states of
`IN_GROUP` and in no other, so entering and leaving them starts and stops it. REST
requests run in a lane beside the steps (`ServeRequests`) once the worker has joined,
and the rejoin config changes ask for waits until it is idle, so a burst of writes
shares one round. What the world may know of the member (its subscription's terms, its
generation, its health) leaves as `Report` whenever it changes: the interpreter reads
no field of the machine, only `start` and `handle`, its two entry points.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, get_args

from herder.member import lifecycle_actions as act
from herder.member.lifecycle_actions import MemberData
from herder.member.lifecycle_messages import (
    ClaimedElsewhere,
    ConfigChanged,
    ConfigUnreadable,
    CoordinatorLost,
    Decision,
    Event,
    FenceDue,
    HeartbeatAnswered,
    Joined,
    LeaveRequested,
    Prepared,
    Report,
    RequestsArrived,
    RequestsServed,
    RestartsDue,
    ServeRequests,
    StartHeartbeat,
    StepDone,
    StopHeartbeat,
    StopRequested,
    Tick,
)
from herder.member.member_states import (
    CARRYING_OUT,
    CHORE_STATES,
    IN_GROUP,
    JOINING_STATES,
    LIVE,
    Chore,
    LifecycleSettings,
    MemberReport,
    MemberState,
    first_report,
)


class IllegalTransition(RuntimeError):
    """An event the machine cannot receive in its state: a bug in whoever drives it."""


class Next(Enum):
    STAY = "stay"
    """The state does not change; the step under way, if any, goes on."""
    CHORE = "the next chore"
    """The step is over: `CHORES` chooses the next one."""


@dataclass(frozen=True)
class When:
    says: str
    holds: Callable[[MemberData, Any], bool]


@dataclass(frozen=True)
class Row:
    to: MemberState | Next
    action: Callable[[MemberData, Any], Decision]
    when: When | None = None


@dataclass(frozen=True)
class ChoreRow:
    """A row without an event: the first transition, and the choice of the next chore."""

    says: str
    due: Callable[[MemberData], bool]
    to: MemberState
    action: Callable[[MemberData], Decision]


class Lifecycle:
    """One worker's member lifecycle. Its entry points are `start` and `handle`; `state`
    and `data` are there for tests to read."""

    def __init__(self, settings: LifecycleSettings) -> None:
        self.state = MemberState.STARTING
        self.data = MemberData(settings)
        self._reported = first_report(settings)

    def start(self) -> Decision:
        """The process starts: warm up and probe first, if there is anything to do."""
        first = next(row for row in START if row.due(self.data))
        decision = first.action(self.data)
        self._enter(first.to)
        return self._report(self._serve(decision))

    def handle(self, event: Event) -> Decision:
        rows = TRANSITIONS.get((self.state, type(event)))
        if rows is not None:
            return self._take(rows, event)
        if type(event) in IGNORED.get(self.state, ()):
            return Decision()
        raise IllegalTransition(f"{type(event).__name__} while {self.state.value}")

    def _take(self, rows: tuple[Row, ...], event: object) -> Decision:
        m, was = self.data, self.state
        row = next(r for r in rows if r.when is None or r.when.holds(m, event))
        decision = row.action(m, event)
        to = was if row.to is Next.STAY else row.to
        if to is Next.CHORE:
            chore = self._chore()
            decision, to = _then(decision, chore.action(m)), chore.to
        self._enter(to)
        decision = _then(decision, Decision(_heartbeat(was, to)))
        return self._report(self._serve(decision))

    def _chore(self) -> ChoreRow:
        """A follower has no leader's chores; a leader's may wait until it is one."""
        m = self.data
        if not m.is_leader:
            m.pending -= {Chore.SCHEDULED_REBALANCE, Chore.REFRESH}
        return next(row for row in CHORES if row.due(m))

    def _enter(self, state: MemberState) -> None:
        """The one place the state changes: to the state a row names."""
        self.state = state

    def _serve(self, decision: Decision) -> Decision:
        """`decision`, and the request lane if requests wait: not before the first join, and
        not before the join a config change asks for (so a stream of writes cannot hold
        that join off for ever; the writes wait at most for the step under way)."""
        m = self.data
        waiting = Chore.REQUESTS in m.pending and m.generation is not None
        held = Chore.RECONFIGURE in m.pending
        in_group = self.state in JOINING_STATES or self.state in IN_GROUP
        if m.serving or held or not waiting or not in_group:
            return decision
        m.serving, m.pending = True, m.pending - {Chore.REQUESTS}
        return Decision((*decision.now, ServeRequests()), decision.step)

    def _report(self, decision: Decision) -> Decision:
        m = self.data
        report = MemberReport(
            m.version,
            m.group_version,
            m.leaving,
            m.generation,
            self.state is MemberState.STARTING,
            m.ready,
            m.unhealthy,
        )
        if report == self._reported:
            return decision
        self._reported = report
        return decision.first(Report(report))


def _then(first: Decision, second: Decision) -> Decision:
    step = second.step if second.step is not None else first.step
    return Decision((*first.now, *second.now), step)


def _heartbeat(was: MemberState, now: MemberState) -> tuple[StartHeartbeat | StopHeartbeat, ...]:
    """Entering the group starts the heartbeat, leaving it stops it (one that ended on
    its own answer stops at once)."""
    if (was in IN_GROUP) == (now in IN_GROUP):
        return ()
    return (StartHeartbeat(),) if now in IN_GROUP else (StopHeartbeat(),)


S = MemberState
STAY, CHORE = Next.STAY, Next.CHORE


def _idle_or_stay(state: MemberState) -> Next:
    """What arrives meanwhile: an idle member goes to the chore it brings, a busy one stays."""
    return CHORE if state is S.IDLE else STAY


FORCED = When("the round must be forced", act.round_must_be_forced)
TAKEN = When("the assignment gives work", act.assignment_taken)
OWNS_WORK = When("the worker owns work", act.owns_work)
FAILED = When("the heartbeat failed", act.heartbeat_failed)

START: tuple[ChoreRow, ...] = (
    ChoreRow("a warm-up or a static probe is wanted", act.preparing, S.STARTING, act.prepare),
    ChoreRow("otherwise", lambda m: True, S.JOINING, act.join),
)
"""The machine's first transition (`Lifecycle.start`), from `STARTING`."""


def _each(
    states: tuple[MemberState, ...], event: type[Event], *rows: Callable[[MemberState], Row]
) -> dict[tuple[MemberState, type[Event]], tuple[Row, ...]]:
    return {(state, event): tuple(row(state) for row in rows) for state in states}


def _meanwhile(
    states: tuple[MemberState, ...],
    event: type[Event],
    action: Callable[[MemberData, Any], Decision],
) -> dict[tuple[MemberState, type[Event]], tuple[Row, ...]]:
    return _each(states, event, lambda s: Row(_idle_or_stay(s), action))


_OUTSIDE = (S.STARTING, S.BACKING_OFF)
_HEARD = (*JOINING_STATES, *IN_GROUP)

TRANSITIONS: dict[tuple[MemberState, type[Event]], tuple[Row, ...]] = {
    (S.STARTING, Prepared): (Row(S.JOINING, act.prepared),),
    (S.JOINING, Joined): (
        Row(S.JOINING_FORCED, act.force_a_round, FORCED),
        Row(S.APPLYING, act.carry_the_assignment_out, TAKEN),
        Row(S.DECLINING, act.carry_the_assignment_out),
    ),
    (S.JOINING_FORCED, Joined): (
        Row(S.APPLYING, act.carry_the_assignment_out, TAKEN),
        Row(S.DECLINING, act.carry_the_assignment_out),
    ),
    (S.JOINING_FENCED, Joined): (
        Row(S.JOINING_FORCED, act.force_a_round, FORCED),
        Row(S.JOINING, act.rejoin_fenced),
    ),
    (S.JOINING, CoordinatorLost): (Row(S.JOINING, act.join_again),),
    (S.JOINING_FORCED, CoordinatorLost): (Row(S.JOINING_FORCED, act.join_again),),
    (S.JOINING_FENCED, CoordinatorLost): (Row(S.JOINING, act.join_again),),
    **_each(_HEARD, ConfigUnreadable, lambda _: Row(S.BACKING_OFF, act.back_off)),
    (S.APPLYING, StepDone): (Row(S.SETTLING, act.turn_ready_and_settle),),
    (S.DECLINING, StepDone): (Row(S.SETTLING, act.settle),),
    (S.SETTLING, StepDone): (Row(CHORE, act.settled),),
    (S.RECONCILING, StepDone): (Row(S.FOLLOWING, act.follow_the_change),),
    **_each(
        (S.ASKING, S.FOLLOWING, S.REFRESHING, S.RESTARTING),
        StepDone,
        lambda _: Row(CHORE, act.step_over),
    ),
    (S.BACKING_OFF, StepDone): (Row(S.JOINING, act.rejoin_after_backing_off),),
    **_each(
        IN_GROUP,
        HeartbeatAnswered,
        lambda s: Row(_idle_or_stay(s), act.rejoin_after_heartbeat, FAILED),
        lambda _: Row(STAY, act.nothing),
    ),
    **_each(
        (S.JOINING, S.JOINING_FORCED),
        FenceDue,
        lambda _: Row(S.JOINING_FENCED, act.fence, OWNS_WORK),
        lambda _: Row(STAY, act.turn_unhealthy),
    ),
    **_each(
        (S.JOINING_FENCED,),
        FenceDue,
        lambda _: Row(STAY, act.fence, OWNS_WORK),
        lambda _: Row(STAY, act.turn_unhealthy),
    ),
    **_each(
        (*_OUTSIDE, *IN_GROUP),
        FenceDue,
        lambda s: Row(_idle_or_stay(s), act.fence_and_rejoin, OWNS_WORK),
        lambda _: Row(STAY, act.turn_unhealthy),
    ),
    **_meanwhile(_HEARD, ClaimedElsewhere, act.want_a_rejoin),
    **_meanwhile((*CHORE_STATES, S.IDLE), Tick, act.keep_time),
    **_meanwhile(LIVE, ConfigChanged, act.remember),
    **_meanwhile(LIVE, RestartsDue, act.remember),
    **_meanwhile(LIVE, RequestsArrived, act.remember),
    **_meanwhile(LIVE, RequestsServed, act.free_the_lane),
    **_meanwhile(LIVE, LeaveRequested, act.announce_departure),
    **_each(LIVE, StopRequested, lambda _: Row(S.STOPPED, act.stop)),
}
"""Every event each state reacts to: the rows, the first whose guard holds applies."""

CHORES: tuple[ChoreRow, ...] = (
    ChoreRow(
        "the scheduled rebalance is due",
        lambda m: Chore.SCHEDULED_REBALANCE in m.pending,
        S.ASKING,
        act.ask_for_the_scheduled_rebalance,
    ),
    ChoreRow("a rejoin is wanted", lambda m: Chore.REJOIN in m.pending, S.JOINING, act.join),
    ChoreRow(
        "a config change needs a rejoin and no REST request runs",
        lambda m: Chore.RECONFIGURE in m.pending and not m.serving,
        S.JOINING,
        act.join,
    ),
    ChoreRow(
        "the config topic changed",
        lambda m: Chore.CONFIG in m.pending,
        S.RECONCILING,
        act.reconcile,
    ),
    ChoreRow(
        "task configs are due", lambda m: Chore.REFRESH in m.pending, S.REFRESHING, act.refresh
    ),
    ChoreRow(
        "automatic restarts are due",
        lambda m: Chore.RESTARTS in m.pending,
        S.RESTARTING,
        act.run_restarts,
    ),
    ChoreRow("nothing else", lambda m: True, S.IDLE, act.rest),
)
"""The next chore once a step is over (`Next.CHORE`): the first row that is due."""

IGNORED: dict[MemberState, tuple[type[Event], ...]] = {
    S.STARTING: (Tick, HeartbeatAnswered, ClaimedElsewhere),
    **{s: (Tick, HeartbeatAnswered) for s in JOINING_STATES},
    **{s: (Tick,) for s in CARRYING_OUT},
    S.BACKING_OFF: (Tick, HeartbeatAnswered, ClaimedElsewhere),
    S.STOPPED: get_args(Event),
}
"""Events stale by rule in a state: a heartbeat's answer after the next join began (its
heartbeat stopped), time passing before the worker is a member, anything once stopped."""
