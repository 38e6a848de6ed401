"""What the member remembers (`MemberData`) and what each row of `herder.member.lifecycle`'s
table does: the guards that choose a row and the actions that give its commands.

An action may change the member's data, never its state: the row it belongs to names
the next state (`herder.member.lifecycle.TRANSITIONS`). An action into a state with a step
gives that step's commands (`Decision.step`); one that stays gives commands to run at
once only. Pure: no I/O, no clock (times come in events).
"""

from __future__ import annotations

from herder.member import lifecycle_messages as do
from herder.member.apply import AssignmentStep, apply_assignment, carry_out
from herder.member.forced_rounds import ForcedRound, forced_round
from herder.member.lifecycle_messages import (
    ClaimedElsewhere,
    ConfigChanged,
    ConfigUnreadable,
    CoordinatorLost,
    Decision,
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
from herder.member.member_states import Chore, LifecycleSettings
from herder.member.membership import Generation, HeartbeatOutcome
from protocol import ProtocolError
from protocol.codec import decode_assignment
from protocol.messages import Allocation, Assignment
from protocol.versions import EAGER_VERSION

CATCH_UP_ATTEMPTS = 3
"""Failed config catch-ups in a row after which a worker stops its work."""
FENCED = "fenced: the group coordinator did not answer in time"
BEHIND = "cannot read the config topic to its end"
SHUTTING_DOWN = "the worker is shutting down"


class MemberData:
    """What the member knows and remembers, beside where it stands (`MemberState`).

    None of it decides which events the member takes: that is the state's. Chores are a
    to-do list whose order is a rule (`Chore`), the request lane runs beside every step
    (`serving`: whether it runs now), and readiness and the hand-off are facts the
    member reports; as states they would multiply the table by each other's count."""

    def __init__(self, settings: LifecycleSettings) -> None:
        self.settings = settings
        self.static = settings.static
        self.version = self.group_version = settings.max_version
        self.generation: Generation | None = None
        self.applied_generation = -1
        self.pending: set[Chore] = set()
        self.serving = False
        self.leaving = False
        self.rejoin_at_ms: int | None = None
        self.catch_up_failures = 0
        self.ready = False
        self.unhealthy: str | None = None
        """Why a worker that was ready is not any more (None while starting or ready)."""
        self.joined_with = b""
        self.announced_in = -1
        self.released_in: int | None = None

    @property
    def is_leader(self) -> bool:
        return self.generation is not None and self.generation.is_leader


# -- guards: which row of a (state, event) pair applies ------------------------------------


def round_must_be_forced(m: MemberData, event: Joined) -> bool:
    """The answer may not reflect what this worker runs (`herder.member.forced_rounds`)."""
    return _forced(m, event) is not None


def assignment_taken(m: MemberData, event: Joined) -> bool:
    """The answer gives the worker its work for the generation."""
    judged = _judged(m, event.generation, event.owned)
    return not isinstance(judged, str) and judged[1].accepted


def preparing(m: MemberData) -> bool:
    """The runtime warms up or the broker's KIP-345 is probed before the first join."""
    return m.settings.warm_up or m.static


def owns_work(m: MemberData, event: FenceDue) -> bool:
    return event.owns_work


def heartbeat_failed(m: MemberData, event: HeartbeatAnswered) -> bool:
    return event.outcome is not HeartbeatOutcome.OK


def _forced(m: MemberData, event: Joined) -> ForcedRound | None:
    return forced_round(
        event.generation,
        static=m.static,
        applied_generation=m.applied_generation,
        joined_with=m.joined_with,
        incarnation=m.settings.incarnation,
    )


def _judged(
    m: MemberData, generation: Generation, owned: Allocation
) -> tuple[Assignment, AssignmentStep] | str:
    """What applying the answer means: the decoded assignment and its step, or why there
    is none (the same generation again, an unreadable assignment)."""
    number = generation.generation
    if m.applied_generation == number:
        return f"the coordinator answered with generation {number} again"
    try:
        assignment = decode_assignment(generation.assignment)
    except ProtocolError as exc:
        return f"unreadable assignment from leader {generation.leader_id} ({exc}); rejoining"
    return assignment, apply_assignment(assignment, owned, m.version, m.settings.max_version)


# -- actions ---------------------------------------------------------------------------------


def join(m: MemberData, *first: do.Command) -> Decision:
    """A join step: the rejoins asked for are about to happen."""
    m.pending -= {Chore.REJOIN, Chore.CONFIG, Chore.RECONFIGURE, Chore.REFRESH}
    if m.group_version == EAGER_VERSION:
        first = (*first, do.StopAllWork(do.StopWhy.EAGER))
    return Decision((), (*first, do.Join()))


def prepare(m: MemberData) -> Decision:
    return Decision((), (do.Prepare(m.settings.warm_up, m.static),))


def prepared(m: MemberData, event: Prepared) -> Decision:
    if event.static_rejoin_honoured is not False:
        return join(m)
    m.static = False
    note = do.Note(
        "warning",
        "the broker does not rebalance when a static member's subscription changes "
        "(Tansu's partial KIP-345): this worker joins without group.instance.id",
    )
    return join(m).first(note, do.JoinAsDynamic())


def join_again(m: MemberData, event: CoordinatorLost) -> Decision:
    return join(m).first(do.Note("warning", f"{event.reason}; retrying"))


def force_a_round(m: MemberData, event: Joined) -> Decision:
    forced = _forced(m, event)
    assert forced is not None, "guarded by round_must_be_forced"
    number = event.generation.generation
    notes: list[do.Command] = [
        do.Note(
            "info",
            f"generation {number} may not reflect what this worker runs ({forced.why}); "
            "leaving and rejoining to force a rebalance",
        )
    ]
    if forced.join_as_dynamic:
        m.static = False
        notes.append(do.JoinAsDynamic())
    return join(m, do.Leave()).first(*notes)


def rejoin_fenced(m: MemberData, event: Joined) -> Decision:
    m.joined_with, m.generation = event.generation.subscription, event.generation
    note = do.Note("info", "fenced while joining; rejoining to report that I run nothing")
    return join(m).first(note)


def carry_the_assignment_out(m: MemberData, event: Joined) -> Decision:
    """What `apply_assignment` decided, as commands: stops before starts."""
    generation = event.generation
    m.joined_with, m.generation = generation.subscription, generation
    judged = _judged(m, generation, event.owned)
    done = do.AssignmentCarriedOut()
    if isinstance(judged, str):
        if m.applied_generation == generation.generation:
            return Decision((do.Note("info", judged),), (done,))
        m.applied_generation = generation.generation
        m.pending.add(Chore.REJOIN)
        unreadable = (do.Announce(generation, None), do.Pause(1.0), done)
        return Decision((do.Note("error", judged),), unreadable)
    m.applied_generation = generation.generation
    assignment, step = judged
    if step.rejoin:
        m.pending.add(Chore.REJOIN)
    if step.accepted:
        m.rejoin_at_ms = event.now_ms + step.delay_ms if step.delay_ms > 0 else None
    commands = carry_out(generation, assignment, step, m.version, m.rejoin_at_ms)
    m.version = step.version
    if step.group_version is not None:
        m.group_version = step.group_version
    return Decision((), (*commands, done))


def turn_ready_and_settle(m: MemberData, event: StepDone) -> Decision:
    now: list[do.Command] = []
    if not m.ready:
        now.append(do.TurnedReady(m.unhealthy))
    m.ready, m.unhealthy = True, None
    now.append(do.Running())
    return settle(m, event).first(*now)


def settle(m: MemberData, event: StepDone) -> Decision:
    now = (do.HandOffDone(),) if _handed_off(m, event) else ()
    return Decision(now, (do.FollowConfig(),))


def _handed_off(m: MemberData, event: StepDone) -> bool:
    """Whether a worker leaving for good runs nothing any more, in a generation after
    its announcement. A leader also waits for the round after, which it leads and
    which places its work: gone before it, it would leave that work unplaced until
    its session expired (11 s of a bounced leader's tasks' 12.5 s gap)."""
    if not m.leaving or m.applied_generation <= m.announced_in:
        return False
    if m.released_in is None:
        if not event.owned.is_empty():
            return False
        m.released_in = m.applied_generation
    return not m.is_leader or m.applied_generation > m.released_in


def settled(m: MemberData, event: StepDone) -> Decision:
    m.catch_up_failures = 0
    return Decision()


def follow_the_change(m: MemberData, event: StepDone) -> Decision:
    if event.work_changed:
        m.pending.add(Chore.RECONFIGURE)
        return Decision((), (do.FollowTargetStates(),))
    return Decision((), (do.FollowConfig(),))


def step_over(m: MemberData, event: StepDone) -> Decision:
    return Decision()


def rejoin_after_backing_off(m: MemberData, event: StepDone) -> Decision:
    return join(m)


def back_off(m: MemberData, event: ConfigUnreadable) -> Decision:
    """The config topic could not be read to its end in time (Kafka's KAFKA-9849).
    Running on a stale config is worse than running nothing for a while: leave the
    group so the others are not held up, and after repeated failures stop all work."""
    m.catch_up_failures += 1
    m.ready, m.unhealthy = False, BEHIND
    failures = m.catch_up_failures
    why = f"{BEHIND} (attempt {failures} of {CATCH_UP_ATTEMPTS}); leaving the group"
    commands: list[do.Command] = [do.Leave()]
    if failures >= CATCH_UP_ATTEMPTS:
        why_stop = "still behind on the config topic: stopping all work until caught up"
        commands += [do.Note("error", why_stop), do.StopAllWork(do.StopWhy.BEHIND)]
    commands.append(do.Pause(min(30.0, 2.0**failures)))
    return Decision((do.Note("error", why),), tuple(commands))


def rejoin_after_heartbeat(m: MemberData, event: HeartbeatAnswered) -> Decision:
    m.pending.add(Chore.REJOIN)
    if event.outcome is HeartbeatOutcome.MEMBER_LOST:
        why = "lost group membership; stopping all work before rejoining"
        return Decision((do.Note("warning", why), do.StopAllWork(do.StopWhy.MEMBER_LOST)))
    return Decision()


def turn_unhealthy(m: MemberData, event: FenceDue) -> Decision:
    """The coordinator may have handed the work on: with or without work, the worker is
    not ready any more."""
    if not m.ready:
        return Decision()
    m.ready, m.unhealthy = False, FENCED
    return Decision((do.TurnedUnhealthy(FENCED),))


def fence(m: MemberData, event: FenceDue) -> Decision:
    """Stop all work before the coordinator can have given it to another worker
    (Kafka's KAFKA-9184)."""
    unhealthy = turn_unhealthy(m, event).now
    return Decision((*unhealthy, do.StopAllWork(do.StopWhy.FENCED)))


def fence_and_rejoin(m: MemberData, event: FenceDue) -> Decision:
    m.pending.add(Chore.REJOIN)
    return fence(m, event)


def want_a_rejoin(m: MemberData, event: ClaimedElsewhere) -> Decision:
    m.pending.add(Chore.REJOIN)
    return Decision()


def announce_departure(m: MemberData, event: LeaveRequested) -> Decision:
    first, m.leaving = not m.leaving, True
    m.announced_in, m.released_in = m.applied_generation, None
    m.pending.add(Chore.REJOIN)
    return Decision((do.Departing(),) if first else ())


def remember(m: MemberData, event: ConfigChanged | RestartsDue | RequestsArrived) -> Decision:
    m.pending.add(do.CHORE_LEFT_BY[type(event)])
    return Decision()


def free_the_lane(m: MemberData, event: RequestsServed) -> Decision:
    m.serving = False
    return Decision()


def keep_time(m: MemberData, event: Tick) -> Decision:
    """The scheduled rebalance comes due (the ticker forgets it too); a leader refreshes
    its task configs."""
    if m.rejoin_at_ms is not None and event.now_ms >= m.rejoin_at_ms:
        m.rejoin_at_ms = None
        m.pending.add(Chore.SCHEDULED_REBALANCE)
    if m.is_leader:
        m.pending.add(Chore.REFRESH)
    return Decision()


def stop(m: MemberData, event: StopRequested) -> Decision:
    m.ready, m.unhealthy = False, SHUTTING_DOWN
    return Decision()


def nothing(m: MemberData, event: object) -> Decision:
    return Decision()


# -- the chores' steps -----------------------------------------------------------------------


def ask_for_the_scheduled_rebalance(m: MemberData) -> Decision:
    m.pending = (m.pending - {Chore.SCHEDULED_REBALANCE}) | {Chore.REJOIN}
    assert m.generation is not None, "only a leader asks"
    return Decision((), (do.RequestRebalance(m.generation.generation), do.ReadConfigToEnd()))


def reconcile(m: MemberData) -> Decision:
    m.pending.discard(Chore.CONFIG)
    return Decision((), (do.ReconcileTaskConfigs(),) if m.is_leader else ())


def refresh(m: MemberData) -> Decision:
    m.pending.discard(Chore.REFRESH)
    return Decision((), (do.RefreshTaskConfigs(),))


def run_restarts(m: MemberData) -> Decision:
    m.pending.discard(Chore.RESTARTS)
    return Decision((), (do.RunRestarts(),))


def rest(m: MemberData) -> Decision:
    return Decision()
