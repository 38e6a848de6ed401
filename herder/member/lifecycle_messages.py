"""The events `herder.member.lifecycle` takes and the commands it gives, as plain values.

Events say what happened (the caller's clock, if it matters, rides in the event);
commands say what to do, and whoever drives the machine decides how: `GroupLoop` with
Kafka and Spark, the simulator in virtual time. A command that needs no action in one
of them (a log line in the simulator) is skipped there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from herder.member.member_states import Chore, MemberReport
from herder.member.membership import Generation, HeartbeatOutcome
from protocol.messages import EMPTY_ALLOCATION, Allocation, Assignment

# -- events: the outcome of a step ---------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """The warm-up and the static-membership probe are over."""

    static_rejoin_honoured: bool | None = None
    """The probe's answer (None: not asked, or it could not tell)."""


@dataclass(frozen=True)
class Joined:
    generation: Generation
    owned: Allocation
    """What the worker runs as the answer arrives."""
    now_ms: int


@dataclass(frozen=True)
class CoordinatorLost:
    """The join could not reach the group coordinator."""

    reason: str


@dataclass(frozen=True)
class ConfigUnreadable:
    """A step could not read the config topic to its end in time."""


@dataclass(frozen=True)
class StepDone:
    """Any other step ran to its end."""

    owned: Allocation = EMPTY_ALLOCATION
    work_changed: bool = False
    """Whether the configured work differs from what the last join reported."""


# -- events: what arrives meanwhile --------------------------------------------------------


@dataclass(frozen=True)
class HeartbeatAnswered:
    outcome: HeartbeatOutcome


@dataclass(frozen=True)
class FenceDue:
    """The coordinator may hand this worker's work on any moment now (the watchdog)."""

    owns_work: bool


@dataclass(frozen=True)
class ConfigChanged:
    pass


@dataclass(frozen=True)
class ClaimedElsewhere:
    """Another worker claimed a task of this one (its query was fenced)."""


@dataclass(frozen=True)
class RequestsArrived:
    pass


@dataclass(frozen=True)
class RestartsDue:
    """Automatic restarts came due (`herder.tasks.restart_timer`): they run between rebalances."""


@dataclass(frozen=True)
class RequestsServed:
    """The request lane ran what was queued when it began (`ServeRequests`)."""


@dataclass(frozen=True)
class Tick:
    """Time passed: the scheduled rebalance may be due, the leader refreshes task configs."""

    now_ms: int


@dataclass(frozen=True)
class LeaveRequested:
    """Leaving for good (scale-down): hand all work over to the others."""


@dataclass(frozen=True)
class StopRequested:
    pass


Event = (
    Prepared
    | Joined
    | CoordinatorLost
    | ConfigUnreadable
    | StepDone
    | HeartbeatAnswered
    | FenceDue
    | ConfigChanged
    | ClaimedElsewhere
    | RequestsArrived
    | RequestsServed
    | RestartsDue
    | Tick
    | LeaveRequested
    | StopRequested
)

CHORE_LEFT_BY: dict[type[Event], Chore] = {
    ConfigChanged: Chore.CONFIG,
    RestartsDue: Chore.RESTARTS,
    RequestsArrived: Chore.REQUESTS,
}
"""The events that only leave a chore for later."""

# -- commands ------------------------------------------------------------------------------


class StopWhy(Enum):
    EAGER = "an eager group stops everything before it joins"
    MEMBER_LOST = "the coordinator no longer knows this member"
    FENCED = "the coordinator did not answer in time"
    BEHIND = "the config topic cannot be read to its end"


@dataclass(frozen=True)
class Prepare:
    warm_up: bool
    probe_static: bool


@dataclass(frozen=True)
class Join:
    """Join the group; ends with `Joined`, `CoordinatorLost` or `ConfigUnreadable`."""


@dataclass(frozen=True)
class JoinAsDynamic:
    """From the next join on, join without `group.instance.id`."""


@dataclass(frozen=True)
class Leave:
    pass


@dataclass(frozen=True)
class StartHeartbeat:
    pass


@dataclass(frozen=True)
class StopHeartbeat:
    pass


@dataclass(frozen=True)
class Announce:
    """The generation just joined and its assignment (None: unreadable)."""

    generation: Generation
    assignment: Assignment | None


@dataclass(frozen=True)
class StopWork:
    allocation: Allocation


@dataclass(frozen=True)
class StartWork:
    allocation: Allocation
    await_release: Allocation


@dataclass(frozen=True)
class StopAllWork:
    why: StopWhy


@dataclass(frozen=True)
class MarkUnplaced:
    """Leader: the work its last round left running nowhere shows UNASSIGNED."""


@dataclass(frozen=True)
class WakeAt:
    """Post a `Tick` at `at_ms` (None: no scheduled rebalance pending). The ticker owns
    the time it wakes at: it forgets `at_ms` once it posted a tick at or after it."""

    at_ms: int | None


@dataclass(frozen=True)
class ReadConfigToEnd:
    pass


@dataclass(frozen=True)
class FollowConfig:
    """Bring the work in line with the config topic: target states, task configs, restarts."""


@dataclass(frozen=True)
class FollowTargetStates:
    pass


@dataclass(frozen=True)
class ReconcileTaskConfigs:
    pass


@dataclass(frozen=True)
class RefreshTaskConfigs:
    pass


@dataclass(frozen=True)
class RequestRebalance:
    """Leader: write a rebalance request to the config topic (the delay expired)."""

    generation: int


@dataclass(frozen=True)
class RunRestarts:
    pass


@dataclass(frozen=True)
class ServeRequests:
    """Run the queued REST requests in the request lane, beside whatever step runs (a
    join, a carry-out starting tasks), and post `RequestsServed` when they are done: a
    write answers once the config topic has it, not once the work it causes is done."""


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Running:
    """The generation's assignment is carried out: say what the worker runs."""


@dataclass(frozen=True)
class TurnedReady:
    was: str | None
    """Why it was not ready (None: it is starting)."""


@dataclass(frozen=True)
class TurnedUnhealthy:
    reason: str


@dataclass(frozen=True)
class HandOffDone:
    """A worker leaving for good runs nothing any more, and its work is placed."""


@dataclass(frozen=True)
class Departing:
    """The worker announced that it leaves for good (once: the first `LeaveRequested`)."""


@dataclass(frozen=True)
class AssignmentCarriedOut:
    """The last command of a carry-out: the rebalance this worker took part in is over."""


@dataclass(frozen=True)
class Report:
    """What the member shows the world changed (`MemberReport`)."""

    report: MemberReport


@dataclass(frozen=True)
class Note:
    level: Literal["info", "warning", "error"]
    text: str


Command = (
    Prepare
    | Join
    | JoinAsDynamic
    | Leave
    | StartHeartbeat
    | StopHeartbeat
    | Announce
    | StopWork
    | StartWork
    | StopAllWork
    | MarkUnplaced
    | WakeAt
    | ReadConfigToEnd
    | FollowConfig
    | FollowTargetStates
    | ReconcileTaskConfigs
    | RefreshTaskConfigs
    | RequestRebalance
    | RunRestarts
    | ServeRequests
    | Pause
    | Running
    | TurnedReady
    | TurnedUnhealthy
    | HandOffDone
    | Departing
    | AssignmentCarriedOut
    | Report
    | Note
)


@dataclass(frozen=True)
class Decision:
    """What to do about one event: `now` at once (beside a step that may be running),
    then `step` in order, as the next step (the machine gives one only when none runs)."""

    now: tuple[Command, ...] = ()
    step: tuple[Command, ...] | None = None

    def first(self, *now: Command) -> Decision:
        """This decision, with `now` done before its own."""
        return Decision((*now, *self.now), self.step)
