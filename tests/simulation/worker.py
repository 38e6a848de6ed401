"""A simulated worker process: what a sparkherd herder does around each rebalance.

Cooperative: it keeps running everything until the leader revokes it; it stops revoked
items, starts assigned ones, rejoins at once after a revocation and after `delay_ms`
otherwise. Eager: it stops everything before every join and starts its complete new
allocation. Either way it starts and stops items only through the ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from herder.assignor import (
    Assignor,
    EagerAssignor,
    GroupRound,
    IncrementalCooperativeAssignor,
)
from protocol.messages import Allocation, Assignment, AssignmentError, Subscription
from tests.simulation.config_log import ConfigLog, Item
from tests.simulation.coordinator import (
    GroupCoordinator,
    Heartbeat,
    JoinedGroup,
    Timeouts,
)
from tests.simulation.events import EventLoop, Scheduled
from tests.simulation.ledger import RunLedger


class Rebalancing(Enum):
    EAGER = "eager"
    KIP_415 = "cooperative (KIP-415)"
    IDENTITY_AWARE = "cooperative, identity-aware"

    @property
    def version(self) -> int:
        return 0 if self is Rebalancing.EAGER else 2


AssignorFactory = Callable[[int | None], Assignor]
"""Makes the assignor of a worker that becomes leader, given the deadline it inherited."""


def standard_assignors(rebalancing: Rebalancing, max_delay_ms: int) -> AssignorFactory:
    def make(inherited_deadline_ms: int | None) -> Assignor:
        if rebalancing is Rebalancing.EAGER:
            return EagerAssignor()
        return IncrementalCooperativeAssignor(
            max_delay_ms,
            identity_aware=rebalancing is Rebalancing.IDENTITY_AWARE,
            inherited_deadline_ms=inherited_deadline_ms,
        )

    return make


@dataclass(frozen=True)
class WorkerEnv:
    loop: EventLoop
    coordinator: GroupCoordinator
    config: ConfigLog
    ledger: RunLedger
    timeouts: Timeouts
    rebalancing: Rebalancing
    make_assignor: AssignorFactory


class SimWorker:
    def __init__(self, name: str, env: WorkerEnv, heartbeat_phase_ms: int = 0) -> None:
        """`heartbeat_phase_ms` staggers heartbeats so workers do not all beat in step."""
        self.name = name
        self._heartbeat_phase_ms = heartbeat_phase_ms
        self.url = f"http://{name}:8083"
        self._env = env
        self.alive = False
        self.leaving = False
        self.member_id: str | None = None
        self.joining = False
        self.running: set[Item] = set()
        self.config_offset = 0
        self._assignor: Assignor | None = None
        self._led_generation: int | None = None
        self._deadline_ms: int | None = None
        self._rejoin: Scheduled | None = None
        self._heartbeat: Scheduled | None = None

    def start(self) -> None:
        """A fresh process: nothing running, no member id, no leader memory."""
        self.alive = True
        self.leaving = False
        self.member_id = None
        self._assignor = None
        self._led_generation = None
        self._deadline_ms = None
        self.read_config(self._env.config.end)
        self.join()
        loop = self._env.loop
        self._heartbeat = loop.call_at(
            loop.now_ms + self._heartbeat_phase_ms + 1, self._beat, activity=False
        )

    def crash(self) -> None:
        self._halt("crash")

    def shut_down(self) -> None:
        """Graceful stop: stop every item, then leave the group (as Connect does)."""
        member_id = self.member_id
        self._halt("shutdown")
        if member_id is not None:
            self._env.coordinator.leave(member_id)

    def retire(self) -> None:
        """Announce a departure for good; leave once the group took all work away."""
        if self._env.rebalancing is Rebalancing.EAGER:
            self.shut_down()
            return
        self.leaving = True
        self.join()

    def read_config(self, offset: int) -> None:
        """The config reader delivered records up to `offset`; new records need a rebalance."""
        if not self.alive or offset <= self.config_offset:
            return
        config = self._env.config
        changed = config.task_counts(self.config_offset) != config.task_counts(offset)
        self.config_offset = offset
        if changed and self.member_id is not None and not self.joining:
            self.join()

    def _read_up_to(self, offset: int) -> None:
        """A blocking read the herder does before acting on an assignment: no rejoin."""
        self.config_offset = max(self.config_offset, offset)

    def join(self) -> None:
        if not self.alive:
            return
        self._env.loop.cancel(self._rejoin)
        if self._env.rebalancing is Rebalancing.EAGER:
            self._stop_all("rejoin")
        self.member_id = self._env.coordinator.join(self, self.member_id, self._subscription())
        self.joining = True

    def lead(self, group: JoinedGroup) -> dict[str, Assignment] | None:
        if not self.alive:
            return None
        if self._assignor is None or self._led_generation != group.generation - 1:
            self._assignor = self._fresh_assignor()
        self._led_generation = group.generation
        version = min(s.max_version for s in group.members.values())
        return self._assignor.assign(
            GroupRound(
                generation=group.generation,
                leader_id=group.leader_id,
                leader_url=self.url,
                version=version,
                leader_max_version=self._env.rebalancing.version,
                members=group.members,
                snapshot=self._env.config.snapshot(self.config_offset),
                now_ms=self._env.loop.now_ms,
            )
        )

    def on_sync(self, generation: int, assignment: Assignment) -> None:
        if not self.alive:
            return
        self.joining = False
        loop = self._env.loop
        if assignment.error is AssignmentError.CONFIG_MISMATCH:
            self._read_up_to(self._env.config.end)
            self._rejoin = loop.call_soon(self.join)
            return
        self._read_up_to(assignment.config_offset)
        for item in _items(assignment.revoked):
            if item in self.running:
                self._stop(item, "revoked")
        for item in _items(assignment.assigned):
            self.running.add(item)
            self._env.ledger.start(item, self.name)
        self._deadline_ms = loop.now_ms + assignment.delay_ms if assignment.delay_ms else None
        if not assignment.revoked.is_empty() or self.config_offset > assignment.config_offset:
            self._rejoin = loop.call_soon(self.join)
        elif self.leaving and not self.running:
            self.shut_down()
        elif assignment.delay_ms > 0:
            self._rejoin = loop.call_at(loop.now_ms + assignment.delay_ms, self.join)

    def on_sync_failed(self, generation: int) -> None:
        if not self.alive:
            return
        if self._led_generation == generation and self._assignor is not None:
            self._assignor.forget()
        self.joining = False
        self._rejoin = self._env.loop.call_soon(self.join)

    def _fresh_assignor(self) -> Assignor:
        deadline = self._deadline_ms
        if deadline is not None and deadline <= self._env.loop.now_ms:
            deadline = None
        return self._env.make_assignor(deadline)

    def _subscription(self) -> Subscription:
        version = self._env.rebalancing.version
        running = self.running if version else set()
        return Subscription(
            version=version,
            max_version=version,
            worker_id=self.name,
            url=self.url,
            config_offset=self.config_offset,
            allocation=Allocation.of(
                (i for i in running if isinstance(i, str)),
                (i for i in running if not isinstance(i, str)),
            ),
            leaving=self.leaving,
        )

    def _schedule_heartbeat(self) -> None:
        loop = self._env.loop
        self._heartbeat = loop.call_at(
            loop.now_ms + self._env.timeouts.heartbeat_interval_ms, self._beat, activity=False
        )

    def _beat(self) -> None:
        if not self.alive:
            return
        if self.member_id is not None:
            answer = self._env.coordinator.heartbeat(self.member_id)
            if answer is Heartbeat.UNKNOWN:
                self._stop_all("expelled")
                self.member_id = None
                self.join()
            elif answer is Heartbeat.REBALANCE:
                self.join()
        self._schedule_heartbeat()

    def _halt(self, cause: str) -> None:
        self._stop_all(cause)
        self.alive = False
        self.joining = False
        self.member_id = None
        self._env.loop.cancel(self._rejoin)
        self._env.loop.cancel(self._heartbeat)

    def _stop_all(self, cause: str) -> None:
        for item in sorted(self.running, key=str):
            self._stop(item, cause)

    def _stop(self, item: Item, cause: str) -> None:
        self.running.discard(item)
        self._env.ledger.stop(item, self.name, cause)


def _items(allocation: Allocation) -> list[Item]:
    found: list[Item] = sorted(allocation.connectors)
    found.extend(sorted(allocation.tasks))
    return found
