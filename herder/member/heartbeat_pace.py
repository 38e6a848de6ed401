"""How often a member heartbeats: often right after a rebalance, then every
`heartbeat.interval.ms` (pure)."""

from __future__ import annotations

FOLLOW_UP_WINDOW_S = 10.0
FOLLOW_UP_HEARTBEAT_S = 0.2


def heartbeat_pause_s(since_join_s: float, heartbeat_interval_ms: int) -> float:
    """How long to wait before the next heartbeat, `since_join_s` after a rebalance.

    A cooperative rebalance that moves work is two rounds: the owners stop what was
    revoked and rejoin at once, and the others hear of the second round only from a
    heartbeat. Work handed over is stopped until that round, so right after a rebalance
    a member asks often (a few requests a second, for a few seconds); afterwards, every
    `heartbeat.interval.ms`.
    """
    interval_s = heartbeat_interval_ms / 1000
    if since_join_s < FOLLOW_UP_WINDOW_S:
        return min(interval_s, FOLLOW_UP_HEARTBEAT_S)
    return interval_s
