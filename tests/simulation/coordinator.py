"""A group coordinator with Kafka's join / sync / heartbeat semantics, in virtual time.

- A join by a new or stable member starts a rebalance; the other members learn of it from
  their next heartbeat and rejoin. The join phase completes when every member has
  rejoined; members that do not rejoin within the rebalance time-out, or stop
  heartbeating for the session time-out, are removed.
- The leader stays leader while it is a member (sticky); otherwise the first member to
  rejoin leads. The leader computes the assignments at completion (if it died after
  joining, the group waits until its session expires) and the coordinator
  hands each member its own (SyncGroup), unless a test made that member's sync fail or a
  new rebalance started first (REBALANCE_IN_PROGRESS).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import Protocol

from protocol.messages import Assignment, Subscription
from tests.simulation.events import EventLoop, Scheduled


@dataclass(frozen=True)
class Timeouts:
    heartbeat_interval_ms: int = 3_000
    session_ms: int = 10_000
    rebalance_ms: int = 60_000


class Heartbeat(Enum):
    OK = "ok"
    REBALANCE = "rebalance in progress"
    UNKNOWN = "unknown member"


class Phase(Enum):
    EMPTY = "empty"
    PREPARING = "preparing rebalance"
    COMPLETING = "awaiting the leader's assignments"
    STABLE = "stable"


@dataclass(frozen=True)
class JoinedGroup:
    """What the leader learns when the join phase completes."""

    generation: int
    leader_id: str
    members: Mapping[str, Subscription]


class MemberLink(Protocol):
    """The coordinator's view of a member process."""

    name: str

    def lead(self, group: JoinedGroup) -> dict[str, Assignment] | None:
        """None: the leader process is gone and will never send its SyncGroup."""
        ...

    def on_sync(self, generation: int, assignment: Assignment) -> None: ...

    def on_sync_failed(self, generation: int) -> None: ...


@dataclass
class _Member:
    link: MemberLink
    subscription: Subscription
    last_heartbeat_ms: int
    joined_at: int | None = None
    """Join order within the current rebalance; None while it has not rejoined."""
    expiry: Scheduled | None = field(default=None, repr=False)


RoundObserver = Callable[[JoinedGroup, Mapping[str, Assignment]], None]


class GroupCoordinator:
    def __init__(self, loop: EventLoop, timeouts: Timeouts, observer: RoundObserver) -> None:
        self._loop = loop
        self._timeouts = timeouts
        self._observer = observer
        self.members: dict[str, _Member] = {}
        self.phase = Phase.EMPTY
        self.generation = 0
        self.leader_id: str | None = None
        self._ids = itertools.count(1)
        self._join_order = itertools.count()
        self._rebalance_deadline: Scheduled | None = None
        self._failing_syncs: set[str] = set()

    def join(self, link: MemberLink, member_id: str | None, subscription: Subscription) -> str:
        if member_id is None or member_id not in self.members:
            member_id = f"{link.name}-{next(self._ids)}"
            self.members[member_id] = _Member(link, subscription, self._loop.now_ms)
        member = self.members[member_id]
        member.subscription = subscription
        if self.phase is not Phase.PREPARING:
            self._prepare_rebalance()
        member.joined_at = next(self._join_order)
        self._heard_from(member_id)
        self._loop.call_soon(self._maybe_complete)
        return member_id

    def heartbeat(self, member_id: str) -> Heartbeat:
        member = self.members.get(member_id)
        if member is None:
            return Heartbeat.UNKNOWN
        self._heard_from(member_id)
        if self.phase is Phase.PREPARING and member.joined_at is None:
            return Heartbeat.REBALANCE
        return Heartbeat.OK

    def leave(self, member_id: str) -> None:
        if member_id in self.members:
            self._remove(member_id)

    def fail_next_sync(self, member_id: str) -> None:
        self._failing_syncs.add(member_id)

    def _heard_from(self, member_id: str) -> None:
        member = self.members[member_id]
        member.last_heartbeat_ms = self._loop.now_ms
        self._loop.cancel(member.expiry)
        member.expiry = self._loop.call_at(
            self._loop.now_ms + self._timeouts.session_ms,
            lambda: self._expire(member_id),
            activity=False,
        )

    def _expire(self, member_id: str) -> None:
        member = self.members.get(member_id)
        silent_ms = self._loop.now_ms - member.last_heartbeat_ms if member else 0
        if member is not None and silent_ms >= self._timeouts.session_ms:
            self._remove(member_id)

    def _remove(self, member_id: str) -> None:
        self._loop.cancel(self.members.pop(member_id).expiry)
        if not self.members:
            self.phase = Phase.EMPTY
            self.leader_id = None
            self._loop.cancel(self._rebalance_deadline)
        elif self.phase is not Phase.PREPARING:
            self._prepare_rebalance()
        else:
            self._loop.call_soon(self._maybe_complete)

    def _prepare_rebalance(self) -> None:
        if self.phase is Phase.COMPLETING:
            generation = self.generation
            for member_id in self.members:
                self._loop.call_soon(partial(self._fail_sync, member_id, generation))
        self.phase = Phase.PREPARING
        for member in self.members.values():
            member.joined_at = None
        self._loop.cancel(self._rebalance_deadline)
        self._rebalance_deadline = self._loop.call_at(
            self._loop.now_ms + self._timeouts.rebalance_ms,
            self._drop_members_that_did_not_rejoin,
            activity=False,
        )

    def _drop_members_that_did_not_rejoin(self) -> None:
        for member_id in [m for m, s in self.members.items() if s.joined_at is None]:
            del self.members[member_id]
        self._maybe_complete()

    def _maybe_complete(self) -> None:
        if self.phase is not Phase.PREPARING:
            return
        if not self.members or any(m.joined_at is None for m in self.members.values()):
            return
        self.generation += 1
        order = sorted(self.members, key=lambda m: self.members[m].joined_at or 0)
        if self.leader_id not in self.members:
            self.leader_id = order[0]
        group = JoinedGroup(
            self.generation, self.leader_id, {m: self.members[m].subscription for m in order}
        )
        self._loop.cancel(self._rebalance_deadline)
        assignments = self.members[self.leader_id].link.lead(group)
        if assignments is None:
            self.phase = Phase.COMPLETING
            return
        self.phase = Phase.STABLE
        self._observer(group, assignments)
        for member_id in order:
            self._loop.call_soon(partial(self._deliver, member_id, group, assignments[member_id]))

    def _fail_sync(self, member_id: str, generation: int) -> None:
        """A member that already rejoined waits for the new round instead of failing."""
        member = self.members.get(member_id)
        if member is not None and member.joined_at is None:
            member.link.on_sync_failed(generation)

    def _deliver(self, member_id: str, group: JoinedGroup, assignment: Assignment) -> None:
        """A rebalance that started since completion fails the sync, as on a real broker."""
        member = self.members.get(member_id)
        if member is None:
            return
        stale = self.generation != group.generation or self.phase is Phase.PREPARING
        if stale:
            self._fail_sync(member_id, group.generation)
        elif member_id in self._failing_syncs:
            self._failing_syncs.discard(member_id)
            member.link.on_sync_failed(group.generation)
        else:
            member.link.on_sync(group.generation, assignment)
