"""What the group loop needs of its group membership, as plain types: a generation, the
members a leader learns of, a heartbeat's outcome, and the `Membership` seam itself.

`herder.member.group_member.GroupMember` speaks Kafka's group protocol for it over aiokafka;
unit tests play a coordinator in memory, the simulator one in virtual time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final, Protocol

TROUBLED_AFTER_ROUNDS: Final = 3
"""Failed rounds in a row after which a worker says so on `/health`."""


class MembershipError(RuntimeError):
    """A membership failure that retrying cannot fix (a configuration problem)."""


class CoordinatorUnavailable(ConnectionError):
    """The group coordinator could not be reached; the caller decides how long to keep trying."""


@dataclass(frozen=True)
class Generation:
    """The outcome of one join + sync round, as seen by this member."""

    generation: int
    member_id: str
    leader_id: str
    assignment: bytes
    subscription: bytes = b""
    """The metadata this member joined the generation with."""

    @property
    def is_leader(self) -> bool:
        return self.member_id == self.leader_id


@dataclass(frozen=True)
class JoinedMembers:
    """What the leader learns from JoinGroup: every member's id and raw metadata."""

    generation: int
    leader_id: str
    metadata: Mapping[str, bytes]
    instance_ids: Mapping[str, str | None]


LeaderCallback = Callable[[JoinedMembers], Awaitable[Mapping[str, bytes]]]
"""The leader's assignment step: raw metadata in, raw assignment per member out."""
Subscribe = Callable[[], Awaitable[bytes]]
"""This member's metadata, asked anew for every JoinGroup of a join: a join can take
many rounds (and a frozen process resumes in the middle of one), and each round must
report what the member runs then, not what it ran when the join began."""


class HeartbeatOutcome(Enum):
    OK = "ok"
    REJOIN = "rejoin"
    """A rebalance started, or completed without us (a stale generation): rejoin, keeping
    cooperative work running. The member is still in the group, so its last metadata
    still claims that work and the leader gives none of it away (as Connect does)."""
    MEMBER_LOST = "member-lost"
    """The coordinator no longer knows this member: the work is no longer ours."""


class Membership(Protocol):
    """What the group loop needs of its group member; `GroupMember` speaks Kafka's group
    protocol, unit tests play a coordinator in memory."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def join(
        self,
        subscribe: Subscribe,
        on_leader: LeaderCallback,
        on_leader_sync_failed: Callable[[], None],
    ) -> Generation: ...

    async def heartbeat(self) -> HeartbeatOutcome: ...

    async def leave(self) -> None: ...

    def must_fence(self, margin_s: float) -> bool: ...

    @property
    def failing_rounds(self) -> int:
        """Rounds (JoinGroup or SyncGroup) failed in a row; 0 once one succeeds."""
        ...

    @property
    def failed_rounds(self) -> int:
        """Rounds failed since the member started."""
        ...

    @property
    def last_round_error(self) -> str:
        """What the last failed round answered."""
        ...

    @property
    def is_static(self) -> bool:
        """Whether it joins with a `group.instance.id` (KIP-345)."""
        ...

    def join_as_dynamic(self) -> None:
        """From the next join on, join without `group.instance.id`."""
        ...

    async def static_rejoin_honoured(self) -> bool:
        """Whether the broker rebalances when a static member's subscription changes."""
        ...
