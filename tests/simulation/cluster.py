"""A simulated sparkherd cluster and the operations a scenario is made of.

Every operation is one step of a history; `settle` runs until the group is quiet, waits
past the scheduled-rebalance delay and checks the quiet-state invariants.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

from herder.assignor.room import closed_workers
from protocol.messages import Allocation, Assignment, ConnectorTaskId
from protocol.versions import CURRENT_VERSION
from tests.simulation.config_log import ConfigLog, Item
from tests.simulation.coordinator import GroupCoordinator, JoinedGroup, Phase, Timeouts
from tests.simulation.events import EventLoop
from tests.simulation.invariants import StabilityGuard, check_quiet_state
from tests.simulation.ledger import InvariantViolation, RunLedger
from tests.simulation.worker import AssignorFactory, Rebalancing, SimWorker, WorkerEnv


@dataclass(frozen=True)
class RoundRecord:
    """One completed join phase, by worker name: what each reported and was answered."""

    generation: int
    at_ms: int
    leader: str
    reported: Mapping[str, Allocation]
    answers: Mapping[str, Assignment]
    loads: Mapping[str, int]
    """What each member said its load was (`Subscription.load`)."""


@dataclass(frozen=True)
class Costs:
    stops: int
    task_stops: int
    rebalance_task_stops: int
    starts: int
    rounds: int
    downtime_s: float


class SimCluster:
    def __init__(
        self,
        rebalancing: Rebalancing = Rebalancing.IDENTITY_AWARE,
        max_delay_ms: int = 30_000,
        timeouts: Timeouts | None = None,
        startup_ms: int = 2_000,
        make_assignor: AssignorFactory | None = None,
        release: int = CURRENT_VERSION,
    ) -> None:
        """`make_assignor` replaces the assignors `rebalancing` implies (to test the checks);
        `release` is the newest protocol version the workers' code knows."""
        self.rebalancing = rebalancing
        self.release = release
        self.max_delay_ms = max_delay_ms
        self.timeouts = timeouts or Timeouts()
        self.loop = EventLoop()
        self.config = ConfigLog()
        self.ledger = RunLedger(self.loop, startup_ms)
        self.coordinator = GroupCoordinator(self.loop, self.timeouts, self._record_round)
        self.guard = StabilityGuard()
        if rebalancing is not Rebalancing.EAGER:
            self.ledger.on_stop = self.guard.check
        self._env = WorkerEnv(
            self.loop,
            self.coordinator,
            self.config,
            self.ledger,
            self.timeouts,
            rebalancing,
            max_delay_ms,
            make_assignor,
        )
        self.workers: dict[str, SimWorker] = {}
        self.rounds: list[RoundRecord] = []
        self._config_lag_until: dict[str, int] = {}

    @property
    def now_ms(self) -> int:
        return self.loop.now_ms

    def join(
        self,
        *names: str,
        rebalancing: Rebalancing | None = None,
        release: int | None = None,
        capacity: int | None = None,
    ) -> None:
        """Start new workers, or restart stopped ones under the same identity, in
        `rebalancing` (default: the cluster's mode) and of `release` (default: the
        cluster's), to mix protocol versions; `capacity` is how many tasks each runs on
        cadence, which its load says (default: it reports none)."""
        self.guard.disturb()
        for name in names:
            if name not in self.workers:
                phase = len(self.workers) * 1_009 % self.timeouts.heartbeat_interval_ms
                self.workers[name] = SimWorker(name, self._env, phase)
            worker = self.workers[name]
            if worker.alive:
                raise ValueError(f"{name} is already running")
            worker.rebalancing = rebalancing or self.rebalancing
            worker.release = release or self.release
            worker.capacity = capacity
            worker.start()

    def leave(self, name: str) -> None:
        """Graceful shutdown (for now): stop everything, send LeaveGroup."""
        self.guard.disturb()
        self._alive(name).shut_down()

    def retire(self, name: str) -> None:
        """Leave for good: announce it, hand work over, then leave."""
        self.guard.disturb()
        self._alive(name).retire()

    def crash(self, name: str) -> None:
        self.guard.disturb()
        self._alive(name).crash()

    def bounce(self, name: str, down_ms: int, *, crash: bool = False) -> None:
        worker = self._alive(name)
        self.guard.disturb()
        if crash:
            worker.crash()
        else:
            worker.shut_down()
        self.loop.call_at(self.now_ms + down_ms, partial(self._restart, worker))

    def put_connector(self, name: str, tasks: int) -> None:
        """Create a connector or change its task count."""
        created = name not in self.config.task_counts()
        if created and self.guard.settled:
            self.guard.concern([name, *(ConnectorTaskId(name, t) for t in range(tasks))])
        else:
            self.guard.disturb()
        self._append(name, tasks)

    def delete_connector(self, name: str) -> None:
        self.guard.disturb()
        self._append(name, None)

    def lag_config(self, name: str, lag_ms: int) -> None:
        """`name` sees config records `lag_ms` late (its reader is behind the topic)."""
        self.guard.disturb()
        self._config_lag_until[name] = self.now_ms + lag_ms

    def fail_next_sync(self, name: str) -> None:
        worker = self._alive(name)
        if worker.member_id is not None:
            self.guard.disturb()
            self.coordinator.fail_next_sync(worker.member_id)

    def advance(self, ms: int) -> None:
        self.loop.run_until(self.now_ms + ms)

    def settle(self, limit_ms: int | None = None) -> None:
        limit = self.now_ms + (limit_ms or 20 * (self.max_delay_ms + self.timeouts.rebalance_ms))
        if not self.loop.run_while(lambda: not self.quiet(), limit):
            raise InvariantViolation(f"t={self.now_ms}ms: the group did not settle")
        generation = self.coordinator.generation
        self.advance(self.max_delay_ms + self.timeouts.session_ms)
        if not self.quiet() or self.coordinator.generation != generation:
            raise InvariantViolation(f"t={self.now_ms}ms: a quiet group rebalanced by itself")
        allocations = self.allocations()
        closed = self.closed_by_load(allocations)
        check_quiet_state(self.config.items(), self.ledger, allocations, closed)
        self.guard.settle()

    def closed_by_load(self, staying: Mapping[str, object]) -> set[str]:
        """The `staying` workers the last round closed to new tasks for their loads."""
        if not self.rounds:
            return set()
        loads = self.rounds[-1].loads
        names = sorted(name for name in loads if name in staying)
        return {names[i] for i in closed_workers([loads[name] for name in names])}

    def quiet(self) -> bool:
        if self.loop.has_pending_activity:
            return False
        alive = {w.member_id: w for w in self.workers.values() if w.alive}
        if set(alive) != set(self.coordinator.members):
            return False
        if any(w.joining for w in alive.values()):
            return False
        return self.coordinator.phase is (Phase.STABLE if alive else Phase.EMPTY)

    def allocations(self) -> dict[str, set[Item]]:
        """What every running, staying worker runs now."""
        return {
            name: set(w.running)
            for name, w in sorted(self.workers.items())
            if w.alive and not w.leaving
        }

    def costs(self) -> Costs:
        ledger = self.ledger
        return Costs(
            stops=ledger.stops,
            task_stops=ledger.task_stops,
            rebalance_task_stops=ledger.rebalance_task_stops,
            starts=ledger.starts,
            rounds=len(self.rounds),
            downtime_s=ledger.downtime_s,
        )

    @staticmethod
    def _restart(worker: SimWorker) -> None:
        """A bounce's comeback, unless a later step already started the worker again."""
        if not worker.alive:
            worker.start()

    def _alive(self, name: str) -> SimWorker:
        worker = self.workers.get(name)
        if worker is None or not worker.alive:
            raise ValueError(f"{name} is not running")
        return worker

    def _append(self, name: str, tasks: int | None) -> None:
        offset = self.config.put(name, tasks)
        self.ledger.configure(self.config.items())
        for worker in self.workers.values():
            if worker.alive:
                at = max(self.now_ms, self._config_lag_until.get(worker.name, 0))
                self.loop.call_at(at, partial(worker.read_config, offset))

    def _record_round(self, group: JoinedGroup, answers: Mapping[str, Assignment]) -> None:
        names = {m: self.coordinator.members[m].link.name for m in group.members}
        self.rounds.append(
            RoundRecord(
                generation=group.generation,
                at_ms=self.now_ms,
                leader=names[group.leader_id],
                reported={names[m]: s.allocation for m, s in group.members.items()},
                answers={names[m]: a for m, a in answers.items()},
                loads={names[m]: s.load for m, s in group.members.items()},
            )
        )
