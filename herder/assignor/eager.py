"""The eager (protocol version 0) assignor: every round starts from scratch.

Eager members stop everything before they join and send no allocation, so there is nothing
to be sticky about: each member's `assigned` is its complete new allocation.
"""

from __future__ import annotations

from herder.assignor.gc_pause import gc_paused
from herder.assignor.placement import LoadModel
from herder.assignor.replies import config_mismatch, leader_lags, reply
from herder.assignor.snapshot import GroupRound
from protocol.messages import Assignment


class EagerAssignor:
    def assign(self, round: GroupRound) -> dict[str, Assignment]:
        if leader_lags(round):
            return config_mismatch(round)
        with gc_paused():
            eligible = sorted(m for m, s in round.members.items() if not s.leaving)
            model = LoadModel(eligible)
            counts = round.snapshot.task_counts
            model.place_tasks({connector: range(count) for connector, count in counts.items()})
            model.place_connectors(counts)
            replies = {member: reply(round) for member in round.members}
            for i, member in enumerate(eligible):
                replies[member] = reply(round, assigned=model.allocation(i))
        return replies

    def forget(self) -> None:
        """Nothing to forget: an eager round never looks at the previous one."""
