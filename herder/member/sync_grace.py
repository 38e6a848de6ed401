"""How long a member holds its next JoinGroup after a round it took (pure).

Apache Kafka answers every member's SyncGroup the moment the leader's arrives. Tansu
answers a follower's by looking again once a second until the leader has sent the
assignments, and a JoinGroup that changes a member's subscription starts the next
generation at once: a member that rejoined within that second of its own SyncGroup
(the cooperative second round: a leader that had just revoked its work, say) took the
round away from a follower that was still to be answered, which waited 8 s for error 27
and took a later one. So a member that may have others still to be answered holds its
next JoinGroup until `SYNC_GRACE_S` after its SyncGroup was answered.
"""

from __future__ import annotations

SYNC_GRACE_S = 1.5
"""Tansu's once-a-second look, and half a second for the follower's request to arrive."""


def join_hold_s(now_s: float, synced_at_s: float | None) -> float:
    """How long to wait before a JoinGroup at `now_s`; `synced_at_s` is when this member's
    last SyncGroup was answered in a round others took too (None: no such round)."""
    if synced_at_s is None:
        return 0.0
    return max(0.0, synced_at_s + SYNC_GRACE_S - now_s)
