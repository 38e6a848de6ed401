"""Two members with one identity: a restarted worker seen next to its dead predecessor.

A worker killed and restarted within `session.timeout.ms` joins as a new member while the
coordinator still lists the old one (with the metadata of its last join). Two live
processes cannot share an identity (the instance id is fenced by the broker; the REST
host:port can be bound only once), so when exactly one member of an identity is new
since the leader's previous round, the others are dead incarnations. Left alone, a dead
member would be handed the work again ("it missed its assignment") until its session
expires, and the returning worker would get its work back only after that and a further
delay; recognised, the work goes straight back to the worker.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from protocol.messages import Subscription


class Incarnations:
    """Remembers dead incarnations while the coordinator keeps listing them."""

    def __init__(self) -> None:
        self._dead: set[str] = set()

    def dead(
        self, members: Mapping[str, Subscription], leader_id: str, previous: Collection[str]
    ) -> set[str]:
        """Members replaced by a newer incarnation; `previous`: last round's members."""
        dead = self._dead & members.keys()
        by_identity: dict[str, list[str]] = {}
        for member in sorted(members.keys() - dead):
            by_identity.setdefault(members[member].identity, []).append(member)
        for same_worker in by_identity.values():
            newcomers = [m for m in same_worker if m not in previous]
            if len(same_worker) > 1 and len(newcomers) == 1:
                dead.update(m for m in same_worker if m != newcomers[0] and m != leader_id)
        self._dead = dead
        return set(dead)
