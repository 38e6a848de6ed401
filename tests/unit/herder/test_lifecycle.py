"""The member lifecycle, one transition at a time (pure: events in, commands out)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from herder.member import lifecycle_messages as do
from herder.member.lifecycle import (
    CHORES,
    IGNORED,
    TRANSITIONS,
    IllegalTransition,
    Lifecycle,
    Next,
    Row,
)
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
    RequestsArrived,
    RequestsServed,
    RestartsDue,
    StepDone,
    StopRequested,
    Tick,
)
from herder.member.member_states import LifecycleSettings, MemberReport, MemberState
from herder.member.membership import Generation, HeartbeatOutcome
from protocol.codec import encode_assignment
from protocol.messages import EMPTY_ALLOCATION, Allocation, Assignment, AssignmentError
from protocol.versions import CURRENT_VERSION, EAGER_VERSION

RUN = "this-run"
TASK = Allocation.of(["c"])
NOTHING = EMPTY_ALLOCATION


def answer(
    assigned: Allocation = NOTHING,
    revoked: Allocation = NOTHING,
    delay_ms: int = 0,
    version: int = CURRENT_VERSION,
    incarnation: str = RUN,
) -> Assignment:
    return Assignment(
        version,
        version,
        AssignmentError.NONE,
        "me",
        "http://me",
        0,
        assigned,
        revoked,
        delay_ms,
        incarnation=incarnation,
    )


def joined(
    number: int = 1,
    assignment: Assignment | None = None,
    *,
    leader: bool = True,
    owned: Allocation = NOTHING,
    subscription: bytes = b"sub",
    now_ms: int = 1_000,
) -> Joined:
    encoded = encode_assignment(assignment or answer())
    generation = Generation(number, "me", "me" if leader else "other", encoded, subscription)
    return Joined(generation, owned, now_ms)


def machine(
    *, static: bool = False, warm_up: bool = False, version: int = CURRENT_VERSION
) -> Subject:
    return Subject(LifecycleSettings(RUN, version, static, warm_up))


def joining(**settings: bool) -> Subject:
    subject = machine(**settings)
    subject.start()
    if subject.state is MemberState.STARTING:
        subject.handle(Prepared(None))
    return subject


def applying(event: Joined | None = None) -> Subject:
    subject = joining()
    subject.handle(event or joined())
    return subject


def member(event: Joined | None = None) -> Subject:
    """Idle between rebalances, after a first assignment that gave it `TASK` as leader."""
    subject = applying(event or joined(assignment=answer(assigned=TASK)))
    subject.handle(StepDone(TASK))
    subject.handle(StepDone(TASK))
    assert subject.state is MemberState.IDLE
    return subject


def busy_member() -> Subject:
    subject = member()
    subject.handle(Tick(2_000))
    assert subject.state is MemberState.REFRESHING
    return subject


def backing_off() -> Subject:
    subject = joining()
    subject.handle(ConfigUnreadable())
    return subject


def stopped() -> Subject:
    subject = member()
    subject.handle(StopRequested())
    return subject


def kinds(commands: tuple[do.Command, ...] | None) -> list[type]:
    return [type(c) for c in commands or () if not isinstance(c, do.Note | do.Report)]


class Subject(Lifecycle):
    """The machine with its `Report`s set aside (`reports`), so the tests of what it does
    compare what it does; the reports are tested on their own."""

    def __init__(self, settings: LifecycleSettings) -> None:
        super().__init__(settings)
        self.reports: list[MemberReport] = []

    def start(self) -> Decision:
        return self._aside(super().start())

    def handle(self, event: Event) -> Decision:
        return self._aside(super().handle(event))

    def _aside(self, decision: Decision) -> Decision:
        self.reports += [c.report for c in decision.now if isinstance(c, do.Report)]
        now = tuple(c for c in decision.now if not isinstance(c, do.Report))
        return Decision(now, decision.step)


# -- every transition of the table can be taken ----------------------------------------------


def declined() -> Joined:
    """An answer that gives no work: the leader's config offset is ahead (catch up)."""
    refused = Assignment(
        CURRENT_VERSION, CURRENT_VERSION, AssignmentError.CONFIG_MISMATCH, "me", "http://me", 9
    )
    return joined(assignment=refused)


PREDECESSORS = joined(assignment=answer(incarnation="a-predecessor"))
"""A static member's first answer, made for the process before it: a round is forced."""


def after(build: Callable[[], Subject], *events: Event) -> Callable[[], Subject]:
    def built() -> Subject:
        subject = build()
        for event in events:
            subject.handle(event)
        return subject

    return built


SLOW = answer(assigned=TASK, delay_ms=5_000)
IN_STATE: dict[MemberState, list[Callable[[], Subject]]] = {
    MemberState.STARTING: [lambda: machine(warm_up=True)],
    MemberState.JOINING: [joining, lambda: joining(static=True)],
    MemberState.JOINING_FORCED: [after(lambda: joining(static=True), PREDECESSORS)],
    MemberState.JOINING_FENCED: [
        after(joining, FenceDue(owns_work=True)),
        after(lambda: joining(static=True), FenceDue(owns_work=True)),
    ],
    MemberState.APPLYING: [applying],
    MemberState.DECLINING: [after(joining, declined())],
    MemberState.SETTLING: [after(applying, StepDone())],
    MemberState.IDLE: [member],
    MemberState.ASKING: [after(lambda: member(joined(assignment=SLOW)), Tick(6_000))],
    MemberState.RECONCILING: [after(member, ConfigChanged())],
    MemberState.FOLLOWING: [after(member, ConfigChanged(), StepDone(TASK))],
    MemberState.REFRESHING: [busy_member],
    MemberState.RESTARTING: [after(member, RestartsDue())],
    MemberState.BACKING_OFF: [backing_off],
    MemberState.STOPPED: [stopped],
}
EVENTS: dict[type, list[Event]] = {
    Prepared: [Prepared(None), Prepared(False)],
    Joined: [joined(), declined(), PREDECESSORS],
    CoordinatorLost: [CoordinatorLost("unreachable")],
    ConfigUnreadable: [ConfigUnreadable()],
    StepDone: [StepDone(), StepDone(TASK, work_changed=True)],
    HeartbeatAnswered: [HeartbeatAnswered(o) for o in HeartbeatOutcome],
    FenceDue: [FenceDue(owns_work=True), FenceDue(owns_work=False)],
    ConfigChanged: [ConfigChanged()],
    ClaimedElsewhere: [ClaimedElsewhere()],
    RequestsArrived: [RequestsArrived()],
    RequestsServed: [RequestsServed()],
    RestartsDue: [RestartsDue()],
    Tick: [Tick(10_000)],
    LeaveRequested: [LeaveRequested()],
    StopRequested: [StopRequested()],
}
ALL_PAIRS = [(state, event) for state in MemberState for event in EVENTS]
CASES = [
    (state, build, event)
    for (state, kind), rows in TRANSITIONS.items()
    for build in IN_STATE[state]
    for event in EVENTS[kind]
]


def the_row(subject: Subject, event: Event) -> Row:
    rows = TRANSITIONS[(subject.state, type(event))]
    return next(r for r in rows if r.when is None or r.when.holds(subject.data, event))


def test_every_state_can_be_reached() -> None:
    for state, builds in IN_STATE.items():
        assert all(build().state is state for build in builds), state


@pytest.mark.parametrize(
    ("state", "build", "event"),
    CASES,
    ids=[f"{s.name.lower()}-{type(e).__name__}-{i}" for i, (s, _, e) in enumerate(CASES)],
)
def test_each_transition_goes_to_the_state_its_row_names(
    state: MemberState, build: Callable[[], Subject], event: Event
) -> None:
    subject = build()
    row = the_row(subject, event)
    subject.handle(event)
    if row.to is Next.STAY:
        assert subject.state is state
    elif row.to is Next.CHORE:
        assert subject.state in {chore.to for chore in CHORES}
    else:
        assert subject.state is row.to


def test_every_row_of_the_table_is_taken_by_some_event() -> None:
    taken = {id(the_row(build(), event)) for _, build, event in CASES}
    missing = [
        f"{state.name} {kind.__name__} -> {row.to}"
        for (state, kind), rows in TRANSITIONS.items()
        for row in rows
        if id(row) not in taken
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("state", "event"),
    [(s, e) for s, e in ALL_PAIRS if (s, e) not in TRANSITIONS],
    ids=[f"{s.name.lower()}-{e.__name__}" for s, e in ALL_PAIRS if (s, e) not in TRANSITIONS],
)
def test_an_event_outside_the_table_is_ignored_by_rule_or_refused(
    state: MemberState, event: type
) -> None:
    subject = IN_STATE[state][0]()
    if event in IGNORED.get(state, ()):
        assert subject.handle(EVENTS[event][0]) == Decision()
        assert subject.state is state
    else:
        with pytest.raises(IllegalTransition, match=f"{event.__name__} while"):
            subject.handle(EVENTS[event][0])


# -- starting ---------------------------------------------------------------------------------


def test_starting_warms_up_and_probes_before_the_first_join() -> None:
    subject = machine(static=True, warm_up=True)
    assert subject.start() == Decision((), (do.Prepare(warm_up=True, probe_static=True),))
    decision = subject.handle(Prepared(True))
    assert subject.state is MemberState.JOINING and kinds(decision.step) == [do.Join]


def test_a_member_with_nothing_to_prepare_joins_at_once() -> None:
    subject = machine()
    assert kinds(subject.start().step) == [do.Join]
    assert subject.state is MemberState.JOINING


def test_a_broker_that_ignores_static_rejoins_makes_the_member_dynamic_before_it_joins() -> None:
    subject = machine(static=True)
    subject.start()
    decision = subject.handle(Prepared(False))
    assert do.JoinAsDynamic() in decision.now and not subject.data.static


def test_an_eager_member_stops_everything_before_each_join() -> None:
    decision = machine(version=EAGER_VERSION).start()
    assert decision.step == (do.StopAllWork(do.StopWhy.EAGER), do.Join())


# -- joining ----------------------------------------------------------------------------------


def test_joined_carries_the_assignment_out_stops_before_starts() -> None:
    subject = joining()
    decision = subject.handle(joined(assignment=answer(assigned=TASK, delay_ms=5_000)))
    assert subject.state is MemberState.APPLYING and do.StartHeartbeat() in decision.now
    assert kinds(decision.step) == [
        do.Announce,
        do.StopWork,
        do.StartWork,
        do.MarkUnplaced,
        do.WakeAt,
        do.ReadConfigToEnd,
        do.AssignmentCarriedOut,
    ]
    assert do.WakeAt(6_000) in (decision.step or ()) and subject.data.rejoin_at_ms == 6_000


def test_a_static_members_first_join_forces_a_round_over_a_predecessors_assignment() -> None:
    subject = joining(static=True)
    replayed = joined(assignment=answer(incarnation="a-predecessor"))
    decision = subject.handle(replayed)
    assert decision.step == (do.Leave(), do.Join())
    assert subject.state is MemberState.JOINING_FORCED
    assert kinds(subject.handle(replayed).now) == [do.StartHeartbeat], "the forced round's answer"


def test_a_static_members_first_join_keeps_an_assignment_made_for_this_run() -> None:
    subject = joining(static=True)
    subject.handle(joined())
    assert subject.state is MemberState.APPLYING


def test_a_changed_subscription_answered_with_the_same_generation_forces_a_round() -> None:
    subject = joining(static=True)
    subject.handle(joined())
    subject.handle(StepDone())
    subject.handle(StepDone())
    assert kinds(subject.handle(ClaimedElsewhere()).step) == [do.Join]
    decision = subject.handle(joined(1, subscription=b"changed"))
    assert do.JoinAsDynamic() in decision.now and decision.step == (do.Leave(), do.Join())
    assert not subject.data.static


def test_the_same_generation_again_changes_no_work() -> None:
    subject = member()
    subject.handle(ClaimedElsewhere())
    decision = subject.handle(joined(1))
    assert decision.step == (do.AssignmentCarriedOut(),)
    assert subject.state is MemberState.DECLINING


def test_an_unreadable_assignment_pauses_and_rejoins() -> None:
    subject = joining()
    generation = Generation(1, "me", "me", b"\xff garbage", b"sub")
    decision = subject.handle(Joined(generation, NOTHING, 0))
    assert kinds(decision.step) == [do.Announce, do.Pause, do.AssignmentCarriedOut]
    subject.handle(StepDone())
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


def test_a_fence_during_the_join_stops_the_work_and_rejoins_after_it() -> None:
    subject = joining()
    decision = subject.handle(FenceDue(owns_work=True))
    assert do.StopAllWork(do.StopWhy.FENCED) in decision.now and decision.step is None
    decision = subject.handle(joined())
    assert kinds(decision.step) == [do.Join] and subject.state is MemberState.JOINING


def test_a_lost_coordinator_during_the_join_joins_again() -> None:
    subject = joining()
    decision = subject.handle(CoordinatorLost("no route"))
    assert kinds(decision.step) == [do.Join]
    assert do.Note("warning", "no route; retrying") in decision.now


# -- the config topic cannot be read --------------------------------------------------------


def test_an_unreadable_config_topic_leaves_the_group_and_backs_off() -> None:
    subject = member()
    subject.handle(RequestsArrived())
    decision = subject.handle(ConfigUnreadable())
    assert subject.state is MemberState.BACKING_OFF and not subject.data.ready
    assert decision.step == (do.Leave(), do.Pause(2.0))
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


def test_the_third_failed_catch_up_in_a_row_stops_all_work() -> None:
    subject = joining()
    for _ in range(2):
        subject.handle(ConfigUnreadable())
        subject.handle(StepDone())
    decision = subject.handle(ConfigUnreadable())
    assert kinds(decision.step) == [do.Leave, do.StopAllWork, do.Pause]


def test_a_member_that_settled_counts_catch_ups_from_zero_again() -> None:
    subject = joining()
    subject.handle(ConfigUnreadable())
    subject.handle(StepDone())
    subject.handle(joined())
    subject.handle(StepDone())
    assert subject.data.catch_up_failures == 1
    subject.handle(StepDone())
    assert subject.data.catch_up_failures == 0


# -- applying ---------------------------------------------------------------------------------


def test_a_carried_out_assignment_turns_the_worker_ready_then_follows_the_config() -> None:
    subject = applying()
    decision = subject.handle(StepDone())
    assert kinds(decision.now) == [do.TurnedReady, do.Running] and subject.data.ready
    assert decision.step == (do.FollowConfig(),) and subject.state is MemberState.SETTLING


def test_a_revocation_rejoins_once_the_config_is_followed() -> None:
    subject = applying(joined(assignment=answer(revoked=TASK)))
    subject.handle(StepDone())
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


def test_a_lost_membership_while_applying_stops_all_work_and_rejoins_after_the_step() -> None:
    subject = applying()
    decision = subject.handle(HeartbeatAnswered(HeartbeatOutcome.MEMBER_LOST))
    assert do.StopAllWork(do.StopWhy.MEMBER_LOST) in decision.now and decision.step is None
    subject.handle(StepDone())
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


# -- between rebalances -----------------------------------------------------------------------


def test_a_heartbeat_that_says_rebalance_rejoins_keeping_the_work() -> None:
    """The heartbeat ended on its answer; leaving the group stops it all the same (a
    heartbeat stops in every way out of the group, and stopping an ended one is a no-op)."""
    decision = member().handle(HeartbeatAnswered(HeartbeatOutcome.REJOIN))
    assert decision.now == (do.StopHeartbeat(),) and kinds(decision.step) == [do.Join]


def test_an_ok_heartbeat_changes_nothing() -> None:
    assert member().handle(HeartbeatAnswered(HeartbeatOutcome.OK)) == Decision()


def test_a_fence_between_rebalances_stops_the_work_turns_unhealthy_and_rejoins() -> None:
    subject = member()
    decision = subject.handle(FenceDue(owns_work=True))
    assert kinds(decision.now) == [do.TurnedUnhealthy, do.StopAllWork, do.StopHeartbeat]
    assert kinds(decision.step) == [do.Join] and not subject.data.ready


def test_a_fence_without_work_only_turns_the_worker_unhealthy() -> None:
    subject = member()
    assert subject.handle(FenceDue(owns_work=False)).now == (
        do.TurnedUnhealthy(subject.data.unhealthy or ""),
    )
    assert subject.state is MemberState.IDLE


@pytest.mark.parametrize("work_changed", [True, False], ids=["work-changed", "same-work"])
def test_a_config_change_is_followed_and_new_work_needs_a_rebalance(work_changed: bool) -> None:
    subject = member()
    assert subject.handle(ConfigChanged()).step == (do.ReconcileTaskConfigs(),)
    decision = subject.handle(StepDone(TASK, work_changed=work_changed))
    expected = do.FollowTargetStates() if work_changed else do.FollowConfig()
    assert decision.step == (expected,)
    after = kinds(subject.handle(StepDone(TASK)).step)
    assert after == ([do.Join] if work_changed else [])


# -- the request lane ------------------------------------------------------------------------

SERVE = Decision((do.ServeRequests(),))


def test_requests_run_in_their_lane_at_once_when_the_member_is_idle() -> None:
    subject = member()
    assert subject.handle(RequestsArrived()) == SERVE and subject.state is MemberState.IDLE


def test_requests_do_not_wait_for_a_join_nor_for_the_carry_out_it_brings() -> None:
    subject = member()
    assert kinds(subject.handle(HeartbeatAnswered(HeartbeatOutcome.REJOIN)).step) == [do.Join]
    assert subject.handle(RequestsArrived()) == SERVE
    subject.handle(RequestsServed())
    carry_out = subject.handle(joined(2, answer(assigned=Allocation.of(["d"])), owned=TASK))
    assert do.StartWork in kinds(carry_out.step) and subject.state is MemberState.APPLYING
    assert subject.handle(RequestsArrived()) == SERVE


def test_requests_sent_before_the_first_join_wait_for_it() -> None:
    subject = joining()
    assert subject.handle(RequestsArrived()) == Decision()
    assert do.ServeRequests() in subject.handle(joined()).now


def test_requests_wait_while_the_worker_backs_off_and_run_once_it_joins_again() -> None:
    subject = member()
    subject.handle(ConfigUnreadable())
    assert subject.handle(RequestsArrived()) == Decision()
    rejoin = subject.handle(StepDone())
    assert kinds(rejoin.step) == [do.Join] and do.ServeRequests() in rejoin.now


def test_requests_that_arrive_while_the_lane_runs_go_next_in_one_batch() -> None:
    subject = member()
    subject.handle(RequestsArrived())
    assert subject.handle(RequestsArrived()) == Decision()
    assert subject.handle(RequestsArrived()) == Decision()
    assert subject.handle(RequestsServed()) == SERVE
    assert subject.handle(RequestsServed()) == Decision() and not subject.data.serving


def test_the_rejoin_config_changes_ask_for_waits_until_the_lane_is_idle() -> None:
    """Two writes in a row: the second arrives while the first's change is being
    followed, and both changes go to the group in one round."""
    subject = member()
    subject.handle(RequestsArrived())
    assert subject.handle(ConfigChanged()).step == (do.ReconcileTaskConfigs(),)
    subject.handle(RequestsServed())
    subject.handle(RequestsArrived())
    assert subject.handle(StepDone(TASK, work_changed=True)).step == (do.FollowTargetStates(),)
    assert subject.handle(ConfigChanged()) == Decision()
    assert subject.handle(StepDone(TASK)).step == (do.ReconcileTaskConfigs(),)
    assert subject.handle(StepDone(TASK, work_changed=True)).step == (do.FollowTargetStates(),)
    assert subject.handle(StepDone(TASK)) == Decision() and subject.state is MemberState.IDLE
    assert kinds(subject.handle(RequestsServed()).step) == [do.Join]


def test_writes_wait_for_the_join_a_config_change_asks_for_then_run_beside_it() -> None:
    """A stream of writes cannot hold off the round their changes need: once it is
    asked for, new writes wait for the step under way, and the join goes first."""
    subject = member()
    subject.handle(ConfigChanged())
    assert subject.handle(StepDone(TASK, work_changed=True)).step == (do.FollowTargetStates(),)
    assert subject.handle(RequestsArrived()) == Decision()
    rejoin = subject.handle(StepDone(TASK))
    assert kinds(rejoin.step) == [do.Join] and do.ServeRequests() in rejoin.now


def test_automatic_restarts_wait_for_the_step_under_way_not_for_the_lane() -> None:
    subject = busy_member()
    subject.handle(RequestsArrived())
    assert subject.handle(RestartsDue()) == Decision()
    assert subject.handle(StepDone()).step == (do.RunRestarts(),)


def test_a_rejoin_the_group_asks_for_does_not_wait_for_the_lane() -> None:
    subject = member()
    subject.handle(RequestsArrived())
    assert kinds(subject.handle(HeartbeatAnswered(HeartbeatOutcome.REJOIN)).step) == [do.Join]


def test_what_arrives_during_a_step_waits_for_its_end_and_a_rejoin_comes_first() -> None:
    subject = busy_member()
    assert subject.handle(ConfigChanged()) == Decision()
    assert subject.handle(HeartbeatAnswered(HeartbeatOutcome.REJOIN)) == Decision()
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


def test_a_tick_makes_the_leader_refresh_task_configs() -> None:
    assert member().handle(Tick(2_000)).step == (do.RefreshTaskConfigs(),)


def test_the_leader_asks_for_the_scheduled_rebalance_when_the_delay_expires() -> None:
    subject = member(joined(assignment=answer(assigned=TASK, delay_ms=5_000)))
    assert subject.handle(Tick(5_999)).step == (do.RefreshTaskConfigs(),)
    subject.handle(StepDone())
    decision = subject.handle(Tick(6_000))
    assert decision.step == (do.RequestRebalance(1), do.ReadConfigToEnd())
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


def test_a_follower_leaves_the_scheduled_rebalance_to_the_leader() -> None:
    subject = member(joined(assignment=answer(assigned=TASK, delay_ms=5_000), leader=False))
    assert subject.handle(Tick(6_000)) == Decision() and subject.data.rejoin_at_ms is None


def test_a_task_claimed_elsewhere_makes_the_member_rejoin() -> None:
    assert kinds(member().handle(ClaimedElsewhere()).step) == [do.Join]


# -- leaving for good -------------------------------------------------------------------------


def test_a_leaving_follower_is_done_once_a_later_generation_left_it_nothing() -> None:
    subject = member(joined(assignment=answer(assigned=TASK), leader=False))
    assert kinds(subject.handle(LeaveRequested()).step) == [do.Join] and subject.data.leaving
    subject.handle(joined(2, answer(revoked=TASK), leader=False, owned=TASK))
    assert do.HandOffDone() in subject.handle(StepDone(NOTHING)).now


def test_a_leaving_leader_stays_for_the_round_that_places_its_work() -> None:
    subject = member()
    subject.handle(LeaveRequested())
    subject.handle(joined(2, answer(revoked=TASK), owned=TASK))
    assert do.HandOffDone() not in subject.handle(StepDone(NOTHING)).now
    subject.handle(StepDone(NOTHING))
    subject.handle(joined(3))
    assert do.HandOffDone() in subject.handle(StepDone(NOTHING)).now


def test_a_departure_announced_before_the_first_join_rides_on_it() -> None:
    subject = machine(warm_up=True)
    subject.start()
    assert subject.handle(LeaveRequested()) == Decision((do.Departing(),))
    assert subject.data.leaving


# -- stopping ---------------------------------------------------------------------------------


def test_a_stopped_member_stops_its_heartbeat_and_hears_nothing_more() -> None:
    subject = member()
    decision = subject.handle(StopRequested())
    assert decision.now == (do.StopHeartbeat(),) and subject.state is MemberState.STOPPED
    assert subject.data.unhealthy == "the worker is shutting down"
    assert subject.handle(joined(5)) == Decision()
