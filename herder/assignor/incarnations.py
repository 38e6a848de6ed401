"""Two members with one identity: a restarted worker seen next to its dead predecessor.

A worker killed and restarted within `session.timeout.ms` joins as a new member while the
coordinator still lists the old one, whose last metadata claims the work it ran. Two live
processes cannot share an identity (the instance id is fenced by the broker; the REST
host:port can be bound only once), so the member that reports nothing is the new
incarnation and the others are dead. Left alone, the dead member would keep the work
"running" until its session expires, and the returning worker would get it back only
after that and a further delay; recognised, the work goes straight back to its worker.
"""

from __future__ import annotations

from collections.abc import Mapping

from protocol.messages import Subscription


def superseded(members: Mapping[str, Subscription], leader_id: str) -> set[str]:
    """Members replaced by a newer incarnation of the same worker in the same round."""
    by_identity: dict[str, list[str]] = {}
    for member in sorted(members):
        by_identity.setdefault(members[member].identity, []).append(member)
    dead: set[str] = set()
    for same_worker in by_identity.values():
        fresh = [m for m in same_worker if members[m].allocation.is_empty()]
        if len(same_worker) > 1 and len(fresh) == 1:
            dead.update(m for m in same_worker if m != fresh[0] and m != leader_id)
    return dead
