"""What a member does about each error code the group coordinator answers: pure.

`GroupMember` sends JoinGroup, SyncGroup and Heartbeat; `reaction` says, for the request
and the code its answer carries, whether the member retries at once (the member id
handshake), counts a failed round and backs off, rejoins, has lost its membership, or
meets a configuration error that retrying cannot fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

NONE = 0
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82

COORDINATOR_GONE = {COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR}
MAX_ROUND_BACKOFF_S: Final = 30.0


class Request(Enum):
    JOIN = "JoinGroup"
    SYNC = "SyncGroup"
    HEARTBEAT = "Heartbeat"


class Verdict(Enum):
    DONE = "the request succeeded"
    RETRY = "send the request again at once (no failed round)"
    FAILED_ROUND = "a failed round: count it, pause (`round_backoff_s`), retry"
    REJOIN = "rejoin, keeping cooperative work running"
    MEMBER_LOST = "the coordinator no longer knows this member: its work is not its own"
    FATAL = "a configuration error: stop"


class MemberId(Enum):
    KEEP = "keep"
    TAKE = "take the one the answer carries"
    FORGET = "join again without one"


@dataclass(frozen=True)
class Reaction:
    verdict: Verdict
    member_id: MemberId = MemberId.KEEP
    forget_coordinator: bool = False
    """Find the coordinator again before the next request (it moved or is loading)."""
    rebalance_started: bool = False
    """A rebalance is under way: from now the member has `rebalance.timeout.ms` to rejoin."""
    unexpected: bool = False
    """A code this table does not know: worth a warning."""


def reaction(request: Request, code: int) -> Reaction:
    """What the member does about `code` in the answer to `request`."""
    if code == NONE:
        return Reaction(Verdict.DONE)
    if request is Request.HEARTBEAT:
        return _heartbeat_reaction(code)
    if request is Request.JOIN and code == MEMBER_ID_REQUIRED:
        return Reaction(Verdict.RETRY, MemberId.TAKE)
    if request is Request.JOIN and code == UNKNOWN_MEMBER_ID:
        return Reaction(Verdict.RETRY, MemberId.FORGET)
    if request is Request.JOIN and code in (INCONSISTENT_GROUP_PROTOCOL, FENCED_INSTANCE_ID):
        return Reaction(Verdict.FATAL)
    member_id = MemberId.FORGET if code == UNKNOWN_MEMBER_ID else MemberId.KEEP
    return Reaction(Verdict.FAILED_ROUND, member_id, forget_coordinator=code in COORDINATOR_GONE)


def _heartbeat_reaction(code: int) -> Reaction:
    if code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
        return Reaction(Verdict.REJOIN, rebalance_started=True)
    if code in COORDINATOR_GONE:
        return Reaction(Verdict.REJOIN)
    if code == UNKNOWN_MEMBER_ID:
        return Reaction(Verdict.MEMBER_LOST, MemberId.FORGET)
    if code == FENCED_INSTANCE_ID:
        return Reaction(Verdict.MEMBER_LOST)
    return Reaction(Verdict.REJOIN, unexpected=True)


def round_backoff_s(failed_in_a_row: int, base_s: float, jitter: float) -> float:
    """The pause before the next round after `failed_in_a_row` failed ones. One failure is
    routine (another member joined between JoinGroup and SyncGroup) and is retried at once;
    from the second the pause doubles from `base_s` up to `MAX_ROUND_BACKOFF_S`, times
    `jitter` (about 1), so a group whose rounds keep failing does not go on at full rate
    with all its members in step (cf. KAFKA-12495)."""
    if failed_in_a_row <= 1:
        return 0.0
    return min(base_s * 2.0 ** (failed_in_a_row - 2), MAX_ROUND_BACKOFF_S) * jitter
