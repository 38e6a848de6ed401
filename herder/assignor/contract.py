"""What the leader's herder calls: one assignor object per leadership, fed round after round."""

from __future__ import annotations

from typing import Protocol

from herder.assignor.snapshot import GroupRound
from protocol.messages import Assignment


class Assignor(Protocol):
    """Computes every member's assignment for a round and remembers what it decided.

    The memory is the leader's only way to tell lost work from new work, so a herder keeps
    the same object while it stays leader and starts a fresh one when it becomes leader.
    """

    def assign(self, round: GroupRound) -> dict[str, Assignment]: ...

    def forget(self) -> None:
        """The leader's own sync failed: what it decided last round may not have happened."""
        ...
