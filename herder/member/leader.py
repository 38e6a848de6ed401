"""The leader's step of a rebalance: raw metadata in, one encoded assignment per member out.

It glues the pure parts together: `protocol.negotiation` decides the group version and
which members to probe or refuse, an assignor decides the work, the codec writes it. One
planner lives as long as its worker stays leader, because the cooperative assignor's
memory of earlier rounds is how it tells lost work from new work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace

from herder.assignor import (
    Assignor,
    ClusterSnapshot,
    EagerAssignor,
    GroupRound,
    HandedOver,
    IncrementalCooperativeAssignor,
)
from herder.assignor.room import closed_members
from herder.member.membership import JoinedMembers
from herder.stores.config_records import ConfigSnapshot
from protocol.codec import encode_assignment
from protocol.connector_table import KNOWN_TABLES, NO_TABLE
from protocol.messages import EMPTY_ALLOCATION, Allocation, Assignment, Subscription
from protocol.negotiation import LeaderInfo, plan_versions
from protocol.versions import is_cooperative

log = logging.getLogger(__name__)

AssignorFactory = Callable[[bool, int | None], Assignor]
"""Makes an assignor from whether the group is cooperative and the inherited deadline."""


class LeaderPlanner:
    """Plans every round this worker leads; `forget` when its own sync failed.

    `inherited_deadline_ms` is a scheduled rebalance this worker learned of as a follower:
    a new leader keeps waiting for the lost work until then (KIP-415, "leader bounces").
    `make_assignor` replaces how the planner makes its assignor, so that the simulator in
    tests/simulation can plant a faulty one and show that its invariant checks catch it;
    the herder leaves it unset and gets the incremental or the eager assignor.
    """

    def __init__(
        self,
        leader_max_version: int,
        max_delay_ms: int,
        identity_aware: bool = True,
        inherited_deadline_ms: int | None = None,
        make_assignor: AssignorFactory | None = None,
    ) -> None:
        self._leader_max_version = leader_max_version
        self._max_delay_ms = max_delay_ms
        self._identity_aware = identity_aware
        self._inherited_deadline_ms = inherited_deadline_ms
        self._make_assignor = make_assignor or self._standard_assignor
        self._assignor: Assignor | None = None
        self._assignor_cooperative: bool | None = None
        self.hand_over_changes: dict[str, HandedOver | None] = {}
        """What the last round changed in the recorded hand-overs (None: clear it); the
        herder writes it to the config topic."""
        self.unplaced = EMPTY_ALLOCATION
        """What the last round left running nowhere: lost work waiting for the delay."""

    def plan(
        self,
        members: JoinedMembers,
        leader_url: str,
        snapshot: ConfigSnapshot,
        now_ms: int,
    ) -> dict[str, bytes]:
        table = KNOWN_TABLES.add(snapshot.connectors)
        plan = plan_versions(members.metadata, self._leader_max_version)
        leader = LeaderInfo(members.leader_id, leader_url, snapshot.offset)
        for member, reason in plan.malformed.items():
            log.warning("member %s sent unreadable metadata (%s); it gets no work", member, reason)
        for member, reason in plan.stale.items():
            log.info("member %s: %s; everyone catches up on the config and rejoins", member, reason)
        for member, sub in plan.probed.items():
            log.info("member %s speaks v%d; probing it down", member, sub.version)
        assignments: dict[str, Assignment] = plan.rejections(leader)
        self.hand_over_changes = {}
        if plan.requires_config_catch_up:
            assignments |= plan.catch_up(leader)
        elif plan.requires_empty_eager_round:
            log.info("group downgrades to eager: an empty round first, so all work stops")
            self._assignor = None
            assignments |= {member: plan.empty_assignment(leader) for member in plan.subscriptions}
        else:
            round_ = GroupRound(
                generation=members.generation,
                leader_id=members.leader_id,
                leader_url=leader_url,
                version=plan.group_version,
                leader_max_version=plan.leader_max_version,
                members=plan.subscriptions,
                snapshot=ClusterSnapshot(
                    snapshot.offset, snapshot.task_counts(), snapshot.handed_over
                ),
                now_ms=now_ms,
            )
            assignments |= self._assignor_for(plan.group_version).assign(round_)
            _log_closed(plan.subscriptions)
            if self._identity_aware and is_cooperative(plan.group_version):
                self.hand_over_changes = hand_over_changes(
                    plan.subscriptions, snapshot.handed_over, now_ms, self._max_delay_ms
                )
        self.unplaced = unplaced_work(snapshot.configured(), plan.subscriptions, assignments)
        return {
            member: encode_assignment(answering(plan.subscriptions.get(member), a, table))
            for member, a in assignments.items()
        }

    def forget(self) -> None:
        if self._assignor is not None:
            self._assignor.forget()

    def _assignor_for(self, version: int) -> Assignor:
        """A fresh assignor whenever the group switches between eager and cooperative."""
        cooperative = is_cooperative(version)
        if self._assignor is None or self._assignor_cooperative != cooperative:
            self._assignor = self._make_assignor(cooperative, self._inherited_deadline_ms)
            self._inherited_deadline_ms = None
            self._assignor_cooperative = cooperative
        return self._assignor

    def _standard_assignor(self, cooperative: bool, inherited_deadline_ms: int | None) -> Assignor:
        if not cooperative:
            return EagerAssignor()
        return IncrementalCooperativeAssignor(
            self._max_delay_ms, self._identity_aware, inherited_deadline_ms=inherited_deadline_ms
        )


def _log_closed(members: Mapping[str, Subscription]) -> None:
    closed = closed_members(members)
    if closed:
        loads = ", ".join(f"{sub.worker_id} ({sub.load} per mille)" for sub in closed.values())
        log.info("overloaded, so given no new task while others have room: %s", loads)


def answering(
    subscription: Subscription | None, assignment: Assignment, table: int = NO_TABLE
) -> Assignment:
    """The assignment, naming the run of the process whose subscription it answers, and
    naming connectors by the indexes of the leader's connector `table` when the member
    holds that same table (it said so in its subscription), in full otherwise."""
    if subscription is None:
        return assignment
    shared = table if subscription.connector_table == table else NO_TABLE
    return replace(assignment, incarnation=subscription.incarnation, connector_table=shared)


def unplaced_work(
    configured: Allocation,
    members: Mapping[str, Subscription],
    assignments: Mapping[str, Assignment],
) -> Allocation:
    """Configured work that no member reports running and none is given this round.

    Work revoked this round is not in it: a cooperative member runs what it reported
    until it applies the revocation and then writes its own status, and it may never
    apply it (its SyncGroup can fail when the next rebalance starts), so the leader must
    not speak for it. An eager member stops everything before it joins.
    """
    placed = EMPTY_ALLOCATION
    for member, sub in members.items():
        answer = assignments.get(member)
        if answer is not None and answer.version > 0:
            placed = placed.union(sub.allocation)
    for answer in assignments.values():
        placed = placed.union(answer.assigned)
    return configured.minus(placed)


def hand_over_changes(
    members: Mapping[str, Subscription],
    recorded: Mapping[str, HandedOver],
    now_ms: int,
    max_delay_ms: int,
) -> dict[str, HandedOver | None]:
    """The records that keep hand-overs known across leaders: a member leaving for good
    with tasks records them under its identity; a record whose identity is back (its
    tasks go back to it in this very round) or whose time is up is cleared. The
    assignor's own memory decides this leader's rounds; the records serve the next
    leader only."""
    changes: dict[str, HandedOver | None] = {}
    back = {sub.identity for sub in members.values() if not sub.leaving}
    for identity, handed in recorded.items():
        if identity in back or now_ms >= handed.until_ms:
            changes[identity] = None
    for sub in members.values():
        if sub.leaving and sub.allocation.tasks:
            tasks: dict[str, set[int]] = {}
            for task in sub.allocation.tasks:
                tasks.setdefault(task.connector, set()).add(task.task)
            changes[sub.identity] = HandedOver(
                now_ms + max_delay_ms, {c: frozenset(n) for c, n in tasks.items()}
            )
    return changes
