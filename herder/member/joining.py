"""What a join asks of this worker, and what it learns from the answer: its subscription,
the leader's step, and the generation's assignment as the logs and REST see it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from herder.assignor import inherited_deadline
from herder.member.leader import LeaderPlanner
from herder.member.member_states import LifecycleSettings, MemberReport
from herder.member.membership import Generation, JoinedMembers
from herder.settings import HerderSettings
from herder.stores.config_store import ConfigStore
from herder.stores.task_configs import TaskConfigWriter
from herder.tasks.work import LocalWork
from protocol.codec import encode_subscription
from protocol.connector_table import subscription_table
from protocol.messages import EMPTY_ALLOCATION, NO_LOAD, Allocation, Assignment, Subscription

log = logging.getLogger(__name__)


class JoinCallbacks:
    """The join's side of the group loop: `subscribe` and `on_leader` for `Membership.join`,
    the leader's planner while this worker leads, and what the last assignment said."""

    def __init__(
        self,
        settings: HerderSettings,
        configs: ConfigStore,
        work: LocalWork,
        task_configs: TaskConfigWriter,
        member: LifecycleSettings,
        report: Callable[[], MemberReport],
        clock: Callable[[], float],
        load: Callable[[], int] = lambda: NO_LOAD,
    ) -> None:
        """`report` is the member machine's last report (`herder.member.lifecycle`), whose terms
        each subscription states. `load` measures this worker's load for its
        subscriptions (`Subscription.load`, sent from v5 on), which the leader places new
        tasks by."""
        self._settings = settings
        self._configs = configs
        self._work = work
        self._task_configs = task_configs
        self._member = member
        self._report = report
        self._clock = clock
        self._load = load
        self._planner: LeaderPlanner | None = None
        self._last_assignment: tuple[Assignment, int] | None = None
        self._configured_at_join: Allocation = EMPTY_ALLOCATION
        self.leader_url: str | None = None
        self.members_led = 0
        """How many members the last round this worker led had (0: it has led none)."""

    async def subscribe(self) -> bytes:
        """For each JoinGroup: what this worker runs now. Tasks another worker has
        claimed meanwhile are given up first, so the subscription never reports them:
        a worker thawed in the middle of a join retried it with the tasks it had owned
        when it froze, and the leader stopped their live copies to hand them "back"."""
        await self._work.give_up_lost()
        snapshot = self._configs.snapshot()
        self._configured_at_join = snapshot.configured()
        report = self._report()
        return encode_subscription(
            Subscription(
                version=report.version,
                max_version=self._member.max_version,
                worker_id=self._settings.worker_id,
                url=self._settings.rest_url,
                config_offset=snapshot.offset,
                allocation=self._work.owned,
                instance_id=self._settings.group_instance_id,
                leaving=report.leaving,
                incarnation=self._member.incarnation,
                connector_table=subscription_table(
                    snapshot.connectors, report.version, report.group_version
                ),
                load=self._measured_load(),
            )
        )

    def _measured_load(self) -> int:
        """A failed measurement must not fail the join: the leader balances counts then."""
        try:
            return self._load()
        except Exception:
            log.exception("could not measure this worker's load; joining without it")
            return NO_LOAD

    def work_changed(self) -> bool:
        """Whether the configured work differs from what the last join reported: new or
        removed work needs a rebalance first."""
        return self._configs.snapshot().configured() != self._configured_at_join

    async def on_leader(self, members: JoinedMembers) -> Mapping[str, bytes]:
        self.members_led = len(members.metadata)
        await self._configs.read_to_end()
        await self._task_configs.reconcile()
        await self._configs.read_to_end()
        if self._planner is None:
            inherited = (
                inherited_deadline(*self._last_assignment) if self._last_assignment else None
            )
            self._planner = LeaderPlanner(
                leader_max_version=self._member.max_version,
                max_delay_ms=self._settings.scheduled_rebalance_max_delay_ms,
                inherited_deadline_ms=inherited,
            )
        assignments = self._planner.plan(
            members,
            leader_url=self._settings.rest_url,
            snapshot=self._configs.snapshot(),
            now_ms=int(self._clock() * 1000),
        )
        for identity, handed in sorted(self._planner.hand_over_changes.items()):
            await self._configs.put_handed_over(identity, handed)
        return assignments

    def forget_round(self) -> None:
        """The leader's own SyncGroup failed: its planner forgets the round it planned."""
        if self._planner is not None:
            self._planner.forget()

    def announce(self, generation: Generation, assignment: Assignment | None) -> None:
        if not generation.is_leader:
            self._planner = None
        if assignment is None:
            return
        self._last_assignment = (assignment, int(self._clock() * 1000))
        self.leader_url = assignment.leader_url or None
        log.info(
            "joined generation %d as %s (v%d): assigned %d (%d awaiting release), revoked %d, "
            "delay %d ms%s",
            generation.generation,
            "leader" if generation.is_leader else "follower",
            assignment.version,
            assignment.assigned.size(),
            assignment.awaiting_release.size(),
            assignment.revoked.size(),
            assignment.delay_ms,
            f", error {assignment.error.name}" if assignment.failed else "",
        )

    def mark_unplaced(self) -> None:
        """Leader only: the work its last round left running nowhere shows UNASSIGNED."""
        if self._planner is not None:
            self._work.mark_unassigned(self._planner.unplaced)

    def log_running(self, generation: int) -> None:
        owned = self._work.owned
        log.info(
            "generation %d: leader %s, running %d connectors and %d tasks",
            generation,
            self.leader_url,
            len(owned.connectors),
            len(owned.tasks),
        )
