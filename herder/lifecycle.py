"""A worker's life in the group as one state machine: events in, commands out, no I/O.

Everything that changes where a worker stands (a join's answer, a heartbeat's, the
watchdog, a config change, a scale-down, the scheduled rebalance, a config topic that
cannot be read, the shutdown) arrives here as an event, and what to do about it leaves
as commands (`herder.lifecycle_messages`); the machine reads no clock (times come in
events) and does nothing itself. `herder.group_loop.GroupLoop` carries the commands out
on Kafka and Spark, the simulator in tests/simulation in virtual time: both run this code.

The loop's own work runs one *step* at a time (prepare, join, carry an assignment out,
a chore between rebalances, a back-off); a step ends with an event (`Joined`,
`StepDone`, ...), and only then does the machine give the next one. What arrives
meanwhile is remembered (`Chore`) or done at once (`Decision.now`: a fence stops the
work while a join is still under way). REST requests run in a lane beside the steps
(`ServeRequests`), and the rejoin config changes ask for waits until it is idle, so a
burst of writes shares one round. `TRANSITIONS` lists every (state, event) pair the
machine reacts to, `IGNORED` those stale by rule; any other is a bug in the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

from herder import lifecycle_messages as do
from herder.apply import apply_assignment, carry_out
from herder.forced_rounds import forced_round
from herder.lifecycle_messages import (
    Chore,
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
    LifecycleSettings,
    MemberState,
    Prepared,
    RequestsArrived,
    RequestsServed,
    RestartsDue,
    Step,
    StepDone,
    StopRequested,
    Tick,
)
from herder.membership import Generation, HeartbeatOutcome
from protocol import ProtocolError
from protocol.codec import decode_assignment
from protocol.messages import Allocation
from protocol.versions import EAGER_VERSION

CATCH_UP_ATTEMPTS = 3
"""Failed config catch-ups in a row after which a worker stops its work."""
FENCED = "fenced: the group coordinator did not answer in time"
BEHIND = "cannot read the config topic to its end"
SHUTTING_DOWN = "the worker is shutting down"


class IllegalTransition(RuntimeError):
    """An event the machine cannot receive in its state: a bug in whoever drives it."""


class Lifecycle:
    """One worker's member lifecycle. Read its fields freely; change them only by `handle`."""

    def __init__(self, settings: LifecycleSettings) -> None:
        self.settings = settings
        self.state = MemberState.STARTING
        self.static = settings.static
        self.version = self.group_version = settings.max_version
        self.generation: Generation | None = None
        self.applied_generation = -1
        self.step: Step | None = None
        self.pending: set[Chore] = set()
        self.serving = False  # the request lane runs (`ServeRequests`)
        self.heartbeating = False
        self.leaving = False
        self.rejoin_at_ms: int | None = None
        self.catch_up_failures = 0
        self.ready = False
        self.unhealthy: str | None = None
        """Why a worker that was ready is not any more (None while starting or ready)."""
        self._joined_with = b""
        self._forced = False
        """The next join's answer is taken as it is: this worker forced that round."""
        self._fenced_in_join = False
        self._accepted = False
        self._announced_in = -1
        self._released_in: int | None = None

    @property
    def is_leader(self) -> bool:
        return self.generation is not None and self.generation.is_leader

    def start(self) -> Decision:
        """The process starts: warm up and probe first, if there is anything to do."""
        if self.settings.warm_up or self.static:
            return self._run(Step.PREPARE, do.Prepare(self.settings.warm_up, self.static))
        return self._join()

    def handle(self, event: Event) -> Decision:
        handler = TRANSITIONS.get((self.state, type(event)))
        if handler is not None:
            return self._serve(handler(self, event))
        if type(event) in IGNORED.get(self.state, ()):
            return Decision()
        raise IllegalTransition(f"{type(event).__name__} while {self.state.value}")

    # -- steps -------------------------------------------------------------------------

    def _run(self, step: Step, *commands: do.Command, now: tuple[do.Command, ...] = ()) -> Decision:
        self.step = step
        return Decision(now, commands)

    def _join(self, *first: do.Command) -> Decision:
        self.pending -= {Chore.REJOIN, Chore.CONFIG, Chore.RECONFIGURE, Chore.REFRESH}
        self._fenced_in_join = False
        self.state = MemberState.JOINING
        if self.group_version == EAGER_VERSION:
            first = (*first, do.StopAllWork(do.StopWhy.EAGER))
        return self._run(Step.JOIN, *first, do.Join(), now=self._stop_heartbeat())

    def _stop_heartbeat(self) -> tuple[do.Command, ...]:
        beating, self.heartbeating = self.heartbeating, False
        return (do.StopHeartbeat(),) if beating else ()

    def _next(self) -> Decision:
        """The member's next chore, or none (idle until an event brings one)."""
        self.step = None
        self.state = MemberState.MEMBER
        if Chore.SCHEDULED_REBALANCE in self.pending:
            self.pending.discard(Chore.SCHEDULED_REBALANCE)
            if self.generation is not None and self.is_leader:
                self.pending.add(Chore.REJOIN)
                request = do.RequestRebalance(self.generation.generation)
                return self._run(Step.SCHEDULED_REBALANCE, request, do.ReadConfigToEnd())
        if Chore.REJOIN in self.pending:
            return self._join()
        if Chore.RECONFIGURE in self.pending and not self.serving:
            return self._join()
        if Chore.CONFIG in self.pending:
            self.pending.discard(Chore.CONFIG)
            return self._run(Step.CONFIG, *([do.ReconcileTaskConfigs()] if self.is_leader else []))
        if Chore.REFRESH in self.pending:
            self.pending.discard(Chore.REFRESH)
            if self.is_leader:
                return self._run(Step.REFRESH, do.RefreshTaskConfigs())
        if Chore.RESTARTS in self.pending:
            self.pending.discard(Chore.RESTARTS)
            return self._run(Step.RESTARTS, do.RunRestarts())
        return Decision()

    def _serve(self, decision: Decision) -> Decision:
        """`decision`, and the request lane if requests wait: not before the first join, and
        not before the join a config change asks for (so a stream of writes cannot hold
        that join off for ever; the writes wait at most for the step under way)."""
        waiting = Chore.REQUESTS in self.pending and self.generation is not None
        held = Chore.RECONFIGURE in self.pending
        if self.serving or held or not waiting or self.state not in _IN_GROUP:
            return decision
        self.serving, self.pending = True, self.pending - {Chore.REQUESTS}
        return Decision((*decision.now, do.ServeRequests()), decision.step)

    def _chore(self, chore: Chore, *now: do.Command) -> Decision:
        """Remember `chore`; start the next one if the member is idle."""
        self.pending.add(chore)
        if self.state is MemberState.MEMBER and self.step is None:
            return self._next().first(*now)
        return Decision(now)

    # -- step outcomes -----------------------------------------------------------------

    def _prepared(self, event: Prepared) -> Decision:
        if event.static_rejoin_honoured is not False:
            return self._join()
        self.static = False
        note = do.Note(
            "warning",
            "the broker does not rebalance when a static member's subscription changes "
            "(Tansu's partial KIP-345): this worker joins without group.instance.id",
        )
        return self._join().first(note, do.JoinAsDynamic())

    def _coordinator_lost(self, event: CoordinatorLost) -> Decision:
        return self._join().first(do.Note("warning", f"{event.reason}; retrying"))

    def _joined(self, event: Joined) -> Decision:
        generation = event.generation
        forced = forced_round(
            generation,
            static=self.static,
            applied_generation=self.applied_generation,
            joined_with=self._joined_with,
            incarnation=self.settings.incarnation,
        )
        if forced is not None and not self._forced:
            self._forced = True
            notes: list[do.Command] = [
                do.Note(
                    "info",
                    f"generation {generation.generation} may not reflect what this worker "
                    f"runs ({forced.why}); leaving and rejoining to force a rebalance",
                )
            ]
            if forced.join_as_dynamic:
                self.static = False
                notes.append(do.JoinAsDynamic())
            return self._join(do.Leave()).first(*notes)
        self._joined_with, self._forced = generation.subscription, False
        self.generation = generation
        if self._fenced_in_join:
            note = do.Note("info", "fenced while joining; rejoining to report that I run nothing")
            return self._join().first(note)
        self.heartbeating = True
        self.state = MemberState.APPLYING
        return self._carry_out(generation, event.owned, event.now_ms).first(do.StartHeartbeat())

    def _carry_out(self, generation: Generation, owned: Allocation, now_ms: int) -> Decision:
        """What `apply_assignment` decided, as commands: stops before starts."""
        self._accepted = False
        number = generation.generation
        if self.applied_generation == number:
            note = do.Note("info", f"the coordinator answered with generation {number} again")
            return self._run(Step.CARRY_OUT, now=(note,))
        self.applied_generation = number
        try:
            assignment = decode_assignment(generation.assignment)
        except ProtocolError as exc:
            self.pending.add(Chore.REJOIN)
            why = f"unreadable assignment from leader {generation.leader_id} ({exc}); rejoining"
            unreadable = (do.Announce(generation, None), do.Pause(1.0))
            return self._run(Step.CARRY_OUT, *unreadable, now=(do.Note("error", why),))
        step = apply_assignment(assignment, owned, self.version, self.settings.max_version)
        if step.rejoin:
            self.pending.add(Chore.REJOIN)
        if step.accepted:
            self._accepted = True
            self.rejoin_at_ms = now_ms + step.delay_ms if step.delay_ms > 0 else None
        commands = carry_out(generation, assignment, step, self.version, self.rejoin_at_ms)
        self.version = step.version
        if step.group_version is not None:
            self.group_version = step.group_version
        return self._run(Step.CARRY_OUT, *commands)

    def _step_done(self, event: StepDone) -> Decision:
        finished, self.step = self.step, None
        if self.state is MemberState.BACKING_OFF:
            return self._join()
        if finished is Step.CARRY_OUT:
            return self._carried_out(event.owned)
        if finished is Step.SETTLE:
            self.catch_up_failures = 0
        if finished is Step.CONFIG and event.work_changed:
            self.pending.add(Chore.RECONFIGURE)
            return self._run(Step.FOLLOW, do.FollowTargetStates())
        if finished is Step.CONFIG:
            return self._run(Step.FOLLOW, do.FollowConfig())
        return self._next()

    def _carried_out(self, owned: Allocation) -> Decision:
        now: list[do.Command] = []
        if self._accepted:
            if not self.ready:
                now.append(do.TurnedReady(self.unhealthy))
            self.ready, self.unhealthy = True, None
            now.append(do.Running())
        if self._handed_off(owned):
            now.append(do.HandOffDone())
        self.state = MemberState.MEMBER
        return self._run(Step.SETTLE, do.FollowConfig(), now=tuple(now))

    def _handed_off(self, owned: Allocation) -> bool:
        """Whether a worker leaving for good runs nothing any more, in a generation after
        its announcement. A leader also waits for the round after, which it leads and
        which places its work: gone before it, it would leave that work unplaced until
        its session expired (11 s of a bounced leader's tasks' 12.5 s gap)."""
        if not self.leaving or self.applied_generation <= self._announced_in:
            return False
        if self._released_in is None:
            if not owned.is_empty():
                return False
            self._released_in = self.applied_generation
        return not self.is_leader or self.applied_generation > self._released_in

    def _config_unreadable(self, event: ConfigUnreadable) -> Decision:
        """The config topic could not be read to its end in time (Kafka's KAFKA-9849).
        Running on a stale config is worse than running nothing for a while: leave the
        group so the others are not held up, and after repeated failures stop all work."""
        self.catch_up_failures += 1
        self.ready, self.unhealthy = False, BEHIND
        self.state = MemberState.BACKING_OFF
        failures = self.catch_up_failures
        why = f"{BEHIND} (attempt {failures} of {CATCH_UP_ATTEMPTS}); leaving the group"
        commands: list[do.Command] = [do.Leave()]
        if failures >= CATCH_UP_ATTEMPTS:
            why_stop = "still behind on the config topic: stopping all work until caught up"
            commands += [do.Note("error", why_stop), do.StopAllWork(do.StopWhy.BEHIND)]
        commands.append(do.Pause(min(30.0, 2.0**failures)))
        now = (do.Note("error", why), *self._stop_heartbeat())
        return self._run(Step.BACK_OFF, *commands, now=now)

    # -- what arrives meanwhile --------------------------------------------------------

    def _heartbeat_answered(self, event: HeartbeatAnswered) -> Decision:
        if event.outcome is HeartbeatOutcome.OK or not self.heartbeating:
            return Decision()
        self.heartbeating = False
        if event.outcome is HeartbeatOutcome.MEMBER_LOST:
            why = "lost group membership; stopping all work before rejoining"
            lost = do.StopAllWork(do.StopWhy.MEMBER_LOST)
            return self._chore(Chore.REJOIN, do.Note("warning", why), lost)
        return self._chore(Chore.REJOIN)

    def _fence_due(self, event: FenceDue) -> Decision:
        """Stop all work before the coordinator can have given it to another worker
        (Kafka's KAFKA-9184); with or without work, the worker is not ready any more."""
        now: tuple[do.Command, ...] = ()
        if self.ready:
            self.ready, self.unhealthy = False, FENCED
            now = (do.TurnedUnhealthy(FENCED),)
        if not event.owns_work:
            return Decision(now)
        now += (do.StopAllWork(do.StopWhy.FENCED),)
        if self.state is MemberState.JOINING:
            self._fenced_in_join = True
            return Decision(now)
        return self._chore(Chore.REJOIN, *now)

    def _rejoin_wanted(self, event: LeaveRequested | ClaimedElsewhere) -> Decision:
        if isinstance(event, LeaveRequested):
            self.leaving = True
            self._announced_in, self._released_in = self.applied_generation, None
        return self._chore(Chore.REJOIN)

    def _remember(self, event: ConfigChanged | RestartsDue | RequestsArrived) -> Decision:
        return self._chore(do.CHORE_LEFT_BY[type(event)])

    def _requests_served(self, event: RequestsServed) -> Decision:
        self.serving = False
        return self._next() if self.state is MemberState.MEMBER and not self.step else Decision()

    def _tick(self, event: Tick) -> Decision:
        if self.rejoin_at_ms is not None and event.now_ms >= self.rejoin_at_ms:
            self.rejoin_at_ms = None
            self.pending.add(Chore.SCHEDULED_REBALANCE)
        if self.is_leader:
            return self._chore(Chore.REFRESH)
        if Chore.SCHEDULED_REBALANCE in self.pending and self.step is None:
            return self._next()
        return Decision()

    def _stop(self, event: StopRequested) -> Decision:
        self.state, self.step = MemberState.STOPPED, None
        self.ready, self.unhealthy = False, SHUTTING_DOWN
        return Decision(self._stop_heartbeat())


Handler = Callable[[Lifecycle, Any], Decision]
_S = MemberState
_LIVE = (_S.STARTING, _S.JOINING, _S.APPLYING, _S.MEMBER, _S.BACKING_OFF)
_IN_GROUP = (_S.JOINING, _S.APPLYING, _S.MEMBER)


def _in(states: tuple[MemberState, ...], event: type[Event], h: Handler) -> dict[Any, Handler]:
    return {(state, event): h for state in states}


TRANSITIONS: dict[tuple[MemberState, type[Event]], Handler] = {
    (_S.STARTING, Prepared): Lifecycle._prepared,
    (_S.JOINING, Joined): Lifecycle._joined,
    (_S.JOINING, CoordinatorLost): Lifecycle._coordinator_lost,
    **_in(_IN_GROUP, ConfigUnreadable, Lifecycle._config_unreadable),
    **_in((_S.APPLYING, _S.MEMBER, _S.BACKING_OFF), StepDone, Lifecycle._step_done),
    **_in((_S.APPLYING, _S.MEMBER), HeartbeatAnswered, Lifecycle._heartbeat_answered),
    **_in(_IN_GROUP, ClaimedElsewhere, Lifecycle._rejoin_wanted),
    (_S.MEMBER, Tick): Lifecycle._tick,
    **_in(_LIVE, FenceDue, Lifecycle._fence_due),
    **_in(_LIVE, ConfigChanged, Lifecycle._remember),
    **_in(_LIVE, RestartsDue, Lifecycle._remember),
    **_in(_LIVE, RequestsArrived, Lifecycle._remember),
    **_in(_LIVE, RequestsServed, Lifecycle._requests_served),
    **_in(_LIVE, LeaveRequested, Lifecycle._rejoin_wanted),
    **_in(_LIVE, StopRequested, Lifecycle._stop),
}
"""Every event each state reacts to, and how."""
IGNORED: dict[MemberState, tuple[type[Event], ...]] = {
    _S.STARTING: (Tick, HeartbeatAnswered, ClaimedElsewhere),
    _S.JOINING: (Tick, HeartbeatAnswered),
    _S.APPLYING: (Tick,),
    _S.BACKING_OFF: (Tick, HeartbeatAnswered, ClaimedElsewhere),
    _S.STOPPED: get_args(Event),
}
"""Events stale by rule in a state: a heartbeat's answer after the next join began (its
heartbeat stopped), time passing before the worker is a member, anything once stopped."""
