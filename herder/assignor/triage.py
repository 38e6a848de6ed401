"""Deciding what happens to a configured item that no member reports running.

Such an item is not running on any member of the round, so it may be started at once
without breaking happens-before; the only question is whether it should wait for its
owner to come back (KIP-415's deferred resolution) and, if not, where it goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from herder.assignor.memory import LeaderMemory
from protocol.messages import Subscription


class Verdict(Enum):
    PLACE = "place"
    """Place by load now: new work, released work, or work whose wait is over."""
    RETURN = "return"
    """Give to one specific member now."""
    WAIT = "wait"
    """Lost: keep it unassigned until its owner returns or the delay expires."""


class Triage:
    def __init__(
        self,
        members: Mapping[str, Subscription],
        eligible: set[str],
        memory: LeaderMemory,
        now_ms: int,
        max_delay_ms: int,
        identity_aware: bool,
    ) -> None:
        self._members = members
        self._eligible = eligible
        self._memory = memory
        self._max_delay_ms = max_delay_ms
        self._homes: dict[str, str] = {}
        if identity_aware:
            for member in sorted(eligible, reverse=True):
                self._homes[members[member].identity] = member
        self._inherited_wait = (
            not memory.knows_round
            and max_delay_ms > 0
            and memory.deadline_ms is not None
            and now_ms < memory.deadline_ms
        )

    def decide(self, known: bool, holder: str | None, handoff: str | None) -> tuple[Verdict, str]:
        """`known`: the leader remembers the item; `holder`: who ran it; `handoff`: who was
        promised it when it was revoked last round. The second value is the member to
        return it to (RETURN) or the holder to wait for (WAIT, empty when unknown)."""
        if handoff is not None:
            return self._to(handoff)
        if not known:
            return (Verdict.WAIT, "") if self._inherited_wait else (Verdict.PLACE, "")
        if holder is not None:
            if holder in self._members:
                return self._to(holder)
            home = self._homes.get(self._memory.identities.get(holder, ""))
            if home is not None:
                return Verdict.RETURN, home
        if self._max_delay_ms == 0:
            return Verdict.PLACE, ""
        return Verdict.WAIT, holder or ""

    def _to(self, member: str) -> tuple[Verdict, str]:
        """A present member that did not report the item missed its assignment: give it again."""
        if member in self._eligible:
            return Verdict.RETURN, member
        return Verdict.PLACE, ""
