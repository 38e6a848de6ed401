"""The incremental cooperative assignor (KIP-415) with sparkherd's extensions.

Beyond Kafka Connect: tasks of each connector are spread evenly (not only totals); a worker
that announces it leaves for good hands its work over at once; a worker that comes back
under the same identity (instance id, else URL) during the delay gets its own work back
immediately instead of when the delay expires (`identity_aware=False` keeps KIP-415).

Up to v2, hand-off of a leaving worker's work is deliberately not done in the same round:
the new owner would start an item while the leaving worker may still be stopping it (sync
responses arrive in any order). The leaving worker gets everything revoked with no delay;
it rejoins at once because it had revocations, which starts the next round at once, and
there the work, no longer reported by anyone, goes to the owners chosen the round before.
No wait for `scheduled.rebalance.max.delay.ms`, and no second revocation round. From v3
on, every member waits for a task's release before it starts it, so a task moves in the
round that revokes it (see `herder.assignor.planner`): the next round is not on the path.
"""

from __future__ import annotations

from dataclasses import replace

from herder.assignor.eager import EagerAssignor
from herder.assignor.gc_pause import gc_paused
from herder.assignor.incarnations import Incarnations
from herder.assignor.memory import LeaderMemory
from herder.assignor.planner import RoundPlanner
from herder.assignor.replies import config_mismatch, leader_lags, reply
from herder.assignor.snapshot import GroupRound
from protocol.messages import Assignment


class IncrementalCooperativeAssignor:
    """One object per leadership; it remembers its previous round.

    `inherited_deadline_ms` lets a worker that becomes leader honour a scheduled rebalance
    it learned of as a follower (see `inherited_deadline`): KIP-415's "leader bounces"
    trace expects the new leader to keep waiting for lost work, which a leader with no
    memory could not do. Work nobody reports is then held until that deadline.
    """

    def __init__(
        self,
        max_delay_ms: int,
        identity_aware: bool = True,
        *,
        inherited_deadline_ms: int | None = None,
    ) -> None:
        if max_delay_ms < 0:
            raise ValueError(f"scheduled.rebalance.max.delay.ms must be >= 0, got {max_delay_ms}")
        self._max_delay_ms = max_delay_ms
        self._identity_aware = identity_aware
        self._memory = LeaderMemory(deadline_ms=inherited_deadline_ms)
        self._incarnations = Incarnations()
        self._eager = EagerAssignor()

    def assign(self, round: GroupRound) -> dict[str, Assignment]:
        if leader_lags(round):
            return config_mismatch(round)
        if round.version == 0:
            self._memory = LeaderMemory()
            return self._eager.assign(round)
        if not self._memory.knows_round:
            self._memory.handed_over = {
                **round.snapshot.handed_over,
                **self._memory.handed_over,
            }
        dead = (
            self._incarnations.dead(round.members, round.leader_id, self._memory.identities)
            if self._identity_aware and self._memory.knows_round
            else set()
        )
        live = {m: s for m, s in round.members.items() if m not in dead}
        with gc_paused():
            planner = RoundPlanner(
                replace(round, members=live), self._memory, self._max_delay_ms, self._identity_aware
            )
            replies, self._memory = planner.plan()
        for member in sorted(dead):
            replies[member] = reply(round, revoked=round.members[member].allocation)
        return replies

    def forget(self) -> None:
        """Unreported work is then treated as new, except while a known delay still runs."""
        self._memory = self._memory.forgotten()


def inherited_deadline(last_assignment: Assignment, received_at_ms: int) -> int | None:
    """The scheduled-rebalance deadline a follower knows from the last assignment it got."""
    if last_assignment.failed or last_assignment.delay_ms <= 0:
        return None
    return received_at_ms + last_assignment.delay_ms
