"""Building the per-member answers of a round, including the config-mismatch answer."""

from __future__ import annotations

from herder.assignor.snapshot import GroupRound
from protocol.messages import EMPTY_ALLOCATION, Allocation, Assignment, AssignmentError


def reply(
    round: GroupRound,
    assigned: Allocation = EMPTY_ALLOCATION,
    revoked: Allocation = EMPTY_ALLOCATION,
    delay_ms: int = 0,
    awaiting_release: Allocation = EMPTY_ALLOCATION,
) -> Assignment:
    return Assignment(
        version=round.version,
        leader_max_version=round.leader_max_version,
        error=AssignmentError.NONE,
        leader_id=round.leader_id,
        leader_url=round.leader_url,
        config_offset=round.snapshot.config_offset,
        assigned=assigned,
        revoked=revoked,
        delay_ms=delay_ms,
        awaiting_release=awaiting_release,
    )


def leader_lags(round: GroupRound) -> bool:
    """A member has read config the leader has not: assigning now could drop new work."""
    return any(s.config_offset > round.snapshot.config_offset for s in round.members.values())


def config_mismatch(round: GroupRound) -> dict[str, Assignment]:
    """Everyone gets no work and must rejoin; nobody is asked to stop anything.

    The offset sent is the highest one a member reported, not the leader's: it tells the
    leader how far it must read before the next round can succeed.
    """
    target = max(s.config_offset for s in round.members.values())
    answer = Assignment(
        version=round.version,
        leader_max_version=round.leader_max_version,
        error=AssignmentError.CONFIG_MISMATCH,
        leader_id=round.leader_id,
        leader_url=round.leader_url,
        config_offset=target,
    )
    return dict.fromkeys(round.members, answer)
