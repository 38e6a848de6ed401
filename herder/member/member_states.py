"""Where a member stands (`MemberState`), what it still has to do (`Chore`), and what it
shows the world (`MemberReport`): the state type of `herder.member.lifecycle` and its settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from herder.member.membership import Generation


class Chore(Enum):
    """What a member has to do once its current step ends, in this order (the REST
    requests excepted: they wait only for the request lane, `MemberData.serving`)."""

    SCHEDULED_REBALANCE = "the scheduled rebalance"
    REJOIN = "a rejoin"
    CONFIG = "following the config topic"
    RECONFIGURE = "a rejoin for a config change, once the REST requests are served"
    REFRESH = "the leader's task config refresh"
    RESTARTS = "the automatic restarts due"
    REQUESTS = "the REST requests queued"


class MemberState(Enum):
    """Where the worker stands, and so which step runs (none in `IDLE` and `STOPPED`);
    `views.WorkerState` is what `/health` makes of it."""

    STARTING = "warming up, probing the broker, before the first join"
    """Warming the runtime up and probing the broker, before the first join."""
    JOINING = "joining the group (JoinGroup, the leader's step, SyncGroup)"
    JOINING_FORCED = "joining a round this worker forced"
    """Its answer is taken as it is: forcing another round would never end."""
    JOINING_FENCED = "joining, fenced meanwhile"
    """The work was stopped during the join: its answer is not carried out, a rejoin
    reports that the worker runs nothing."""
    APPLYING = "carrying out an assignment that gives work: stops, then starts"
    """Carrying out an assignment that gives the worker its work (heartbeats run)."""
    DECLINING = "carrying out an assignment that gives no work"
    """Carrying out an assignment that gives no work: a version probe, a config offset
    behind the leader's, an unreadable one, the same generation again."""
    SETTLING = "following the config topic after an assignment"
    """Following the config topic after an assignment."""
    IDLE = "a member with nothing to do until an event brings a chore"
    """A member between rebalances with nothing to do, until an event brings a chore."""
    ASKING = "asking for the scheduled rebalance"
    RECONCILING = "reconciling task configs after a config change"
    FOLLOWING = "following the config topic after a config change"
    REFRESHING = "refreshing task configs"
    RESTARTING = "running the automatic restarts due"
    BACKING_OFF = "out of the group, pausing before it joins again"
    """Out of the group after the config topic could not be read, until a pause ends."""
    STOPPED = "stopped: every event is ignored"


JOINING_STATES = (MemberState.JOINING, MemberState.JOINING_FORCED, MemberState.JOINING_FENCED)
CARRYING_OUT = (MemberState.APPLYING, MemberState.DECLINING)
CHORE_STATES = (
    MemberState.SETTLING,
    MemberState.ASKING,
    MemberState.RECONCILING,
    MemberState.FOLLOWING,
    MemberState.REFRESHING,
    MemberState.RESTARTING,
)
"""A member between rebalances, with a step under way."""
IN_GROUP = (*CARRYING_OUT, *CHORE_STATES, MemberState.IDLE)
"""Holding a generation: the heartbeat runs in these states and in no other."""
LIVE = (MemberState.STARTING, *JOINING_STATES, *IN_GROUP, MemberState.BACKING_OFF)


@dataclass(frozen=True)
class LifecycleSettings:
    incarnation: str
    """This run of the process, as its subscription names it (`Subscription.incarnation`)."""
    max_version: int
    static: bool
    """Whether the member joins with a `group.instance.id` (KIP-345)."""
    warm_up: bool = False


@dataclass(frozen=True)
class MemberReport:
    """What the member shows the world (`Report`): the terms of its next subscription,
    its generation, and what `/health` says. The interpreter keeps the last one it was
    given and reads nothing else of the machine."""

    version: int
    """The protocol version of the next subscription."""
    group_version: int
    leaving: bool
    generation: Generation | None
    starting: bool
    ready: bool
    unhealthy: str | None
    """Why a worker that was ready is not any more (None while starting or ready)."""

    @property
    def is_leader(self) -> bool:
        return self.generation is not None and self.generation.is_leader


def first_report(settings: LifecycleSettings) -> MemberReport:
    """What a member shows before its first event: it starts, speaking its newest version."""
    version = settings.max_version
    return MemberReport(version, version, False, None, True, False, None)
