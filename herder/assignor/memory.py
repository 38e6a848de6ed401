"""What a leader remembers between rounds, and why each piece is needed.

Without memory an unreported item could be new or lost; the leader tells them apart by
remembering who was expected to run what. What each member holds is kept per member (the
round's own sets, not copied): inverting 100k tasks every round would cost more than the
rest of the round, and only the few connectors with unreported tasks need the inverse.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field

from herder.assignor.placement import TaskSets
from herder.assignor.snapshot import HandedOver

LostTasks = dict[str, dict[int, str | None]]
"""connector -> task number -> member that ran it before it was lost (None: unknown)."""


@dataclass
class RevocationPacing:
    """Consecutive rounds that revoke for balance back off exponentially (no rebalance storms).

    A balancing revocation is normally followed by a quiet hand-off round; a group that keeps
    changing in between would otherwise revoke every round.
    """

    revoked_last_round: bool = False
    streak: int = 0
    hold_until_ms: int | None = None


FIRST_HOLD_MS = 1_000
HOLD_GROWTH = 4


def hold_ms(streak: int, max_delay_ms: int) -> int:
    """Hold for 1 s, 4 s, 16 s ... never longer than the scheduled-rebalance delay."""
    growth: int = HOLD_GROWTH ** (streak - 1)
    return min(max_delay_ms, FIRST_HOLD_MS * growth)


@dataclass
class LeaderMemory:
    knows_round: bool = False
    """False for a fresh leader or one whose sync failed: it cannot tell lost from new."""
    held_tasks: dict[str, TaskSets] = field(default_factory=dict)
    """member -> tasks it runs after last round (hand-offs below take precedence)."""
    held_connectors: dict[str, Set[str]] = field(default_factory=dict)
    lost_tasks: LostTasks = field(default_factory=dict)
    lost_connectors: dict[str, str | None] = field(default_factory=dict)
    task_handoffs: dict[str, dict[int, str]] = field(default_factory=dict)
    """Tasks revoked last round and the member meant to get them this round."""
    connector_handoffs: dict[str, str] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)
    """member id -> stable identity, also for departed holders of lost items."""
    deadline_ms: int | None = None
    """When lost items stop waiting for their owner (KIP-415 scheduled rebalance)."""
    candidates: set[str] = field(default_factory=set)
    """Members that joined empty while lost items waited: first in line for them."""
    pacing: RevocationPacing = field(default_factory=RevocationPacing)
    handed_over: dict[str, HandedOver] = field(default_factory=dict)
    """identity -> what a member with that identity handed over when it left."""

    def forgotten(self) -> LeaderMemory:
        """Drop last round's decisions but not the deadline nor what went where in a
        hand-off: the wait the one measures is real, and the other is about identities,
        which a failed round does not change."""
        return LeaderMemory(deadline_ms=self.deadline_ms, handed_over=self.handed_over)
