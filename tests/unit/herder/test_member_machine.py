"""The member machine's rewritten transitions: the states that were flags (a forced
round, a join fenced meanwhile, an assignment declined), the heartbeat that follows the
states in the group, and what the machine tells its interpreter instead of being read
(`Report`, `Departing`, `AssignmentCarriedOut`)."""

from __future__ import annotations

from herder.member import lifecycle_messages as do
from herder.member.lifecycle import Lifecycle
from herder.member.lifecycle_actions import MemberData
from herder.member.lifecycle_messages import (
    ConfigChanged,
    CoordinatorLost,
    FenceDue,
    HeartbeatAnswered,
    LeaveRequested,
    StepDone,
    StopRequested,
    Tick,
)
from herder.member.member_states import LifecycleSettings, MemberReport, MemberState, first_report
from herder.member.membership import HeartbeatOutcome
from tests.unit.herder.test_lifecycle import (
    PREDECESSORS,
    RUN,
    SLOW,
    TASK,
    answer,
    applying,
    declined,
    joined,
    joining,
    kinds,
    machine,
    member,
)


def where(subject: Lifecycle) -> MemberState:
    """The state, read afresh (each event may change it)."""
    return subject.state


def test_the_answer_to_a_forced_round_is_taken_as_it_is() -> None:
    subject = joining(static=True)
    subject.handle(PREDECESSORS)
    assert where(subject) is MemberState.JOINING_FORCED
    decision = subject.handle(PREDECESSORS)
    assert where(subject) is MemberState.APPLYING and do.StartHeartbeat() in decision.now


def test_a_lost_coordinator_during_a_forced_round_keeps_it_forced() -> None:
    subject = joining(static=True)
    subject.handle(PREDECESSORS)
    assert kinds(subject.handle(CoordinatorLost("gone")).step) == [do.Join]
    assert where(subject) is MemberState.JOINING_FORCED


def test_a_fence_during_a_forced_round_makes_its_answer_a_rejoin() -> None:
    subject = joining(static=True)
    subject.handle(PREDECESSORS)
    decision = subject.handle(FenceDue(owns_work=True))
    assert do.StopAllWork(do.StopWhy.FENCED) in decision.now and decision.step is None
    assert where(subject) is MemberState.JOINING_FENCED
    rejoin = subject.handle(joined(2))
    assert kinds(rejoin.step) == [do.Join] and where(subject) is MemberState.JOINING


def test_a_fenced_join_answered_with_a_predecessors_assignment_forces_a_round() -> None:
    subject = joining(static=True)
    subject.handle(FenceDue(owns_work=True))
    assert subject.handle(PREDECESSORS).step == (do.Leave(), do.Join())
    assert where(subject) is MemberState.JOINING_FORCED


def test_a_lost_coordinator_during_a_fenced_join_forgets_the_fence() -> None:
    """The work is stopped already: the next answer is carried out."""
    subject = joining()
    subject.handle(FenceDue(owns_work=True))
    subject.handle(CoordinatorLost("gone"))
    assert where(subject) is MemberState.JOINING
    subject.handle(joined())
    assert where(subject) is MemberState.APPLYING


def test_a_declined_assignment_settles_without_turning_the_worker_ready_then_rejoins() -> None:
    subject = joining()
    decision = subject.handle(declined())
    assert where(subject) is MemberState.DECLINING and do.StartHeartbeat() in decision.now
    assert kinds(decision.step)[-2:] == [do.StopWork, do.AssignmentCarriedOut]
    settle = subject.handle(StepDone())
    assert do.TurnedReady not in kinds(settle.now) and not subject.data.ready
    assert where(subject) is MemberState.SETTLING
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


def test_a_carry_out_ends_with_the_end_of_the_rebalance() -> None:
    assert kinds(joining().handle(joined()).step)[-1] is do.AssignmentCarriedOut


def test_leaving_the_group_stops_the_heartbeat_and_joining_it_starts_it() -> None:
    subject = member()
    assert do.StopHeartbeat() in subject.handle(do.ConfigUnreadable()).now
    assert where(subject) is MemberState.BACKING_OFF
    assert do.StopHeartbeat() not in subject.handle(StepDone()).now
    assert do.StartHeartbeat() in subject.handle(joined(2)).now


def test_a_stop_from_a_join_stops_no_heartbeat() -> None:
    subject = joining()
    assert subject.handle(StopRequested()).now == ()
    assert where(subject) is MemberState.STOPPED


def test_the_machine_reports_what_the_world_may_know_when_it_changes() -> None:
    subject = machine(warm_up=True)
    subject.start()
    assert subject.reports == []
    subject.handle(do.Prepared(None))
    first = first_report(subject.data.settings)
    assert subject.reports == [
        MemberReport(first.version, first.version, False, None, False, False, None)
    ]
    subject.handle(joined(assignment=answer(assigned=TASK)))
    subject.handle(StepDone(TASK))
    report = subject.reports[-1]
    assert report.ready and report.is_leader and report.generation is not None
    count = len(subject.reports)
    subject.handle(StepDone(TASK))
    subject.handle(ConfigChanged())
    assert len(subject.reports) == count, "nothing the world knows changed"
    subject.handle(LeaveRequested())
    assert subject.reports[-1].leaving


def test_a_report_is_the_first_command_so_the_join_after_it_states_its_terms() -> None:
    subject = member()
    decision = Lifecycle.handle(subject, LeaveRequested())
    assert isinstance(decision.now[0], do.Report) and decision.now[0].report.leaving
    assert kinds(decision.step) == [do.Join]


def test_only_the_first_leave_request_says_the_worker_is_departing() -> None:
    subject = member()
    assert do.Departing() in subject.handle(LeaveRequested()).now
    subject.handle(joined(2, answer(revoked=TASK), owned=TASK))
    assert do.Departing() not in subject.handle(LeaveRequested()).now


def test_the_scheduled_rebalance_is_forgotten_once_due_and_asked_for_once() -> None:
    subject = member(joined(assignment=SLOW))
    assert subject.handle(Tick(6_000)).step == (do.RequestRebalance(1), do.ReadConfigToEnd())
    assert where(subject) is MemberState.ASKING and subject.data.rejoin_at_ms is None
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


def test_a_follower_drops_the_leaders_chores() -> None:
    subject = member(joined(assignment=SLOW, leader=False))
    assert subject.handle(Tick(6_000)).step is None
    assert where(subject) is MemberState.IDLE and subject.data.pending == set()


def test_a_failed_heartbeat_during_a_step_waits_for_its_end() -> None:
    subject = applying()
    decision = subject.handle(HeartbeatAnswered(HeartbeatOutcome.REJOIN))
    assert decision.step is None and where(subject) is MemberState.APPLYING
    subject.handle(StepDone())
    assert kinds(subject.handle(StepDone()).step) == [do.Join]


def test_the_data_has_no_state_to_set() -> None:
    """Actions take `MemberData`: they cannot set the state, only the table's rows do."""
    data = MemberData(LifecycleSettings(RUN, 5, static=False))
    assert not hasattr(data, "state")
