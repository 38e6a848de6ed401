"""The properties every simulated history must keep.

1. No item runs on two workers at the same instant: checked by the ledger at every start.
2. Once the group has been quiet for longer than the delay, every configured item runs
   exactly once, no hand-over still waits for a release, and the load is balanced
   (connectors, tasks, and each connector's tasks differ by at most one between
   workers): `check_quiet_state`. A worker the last round closed for its load (v5,
   `herder.assignor.room`) may hold fewer tasks than the others, never more than one
   above the fewest an open worker holds.
3. A change that does not concern an item never stops it: `StabilityGuard`. While the
   group is settled, the only change that does not disturb the balance is adding a
   connector, and it concerns only that connector's items; membership changes,
   deletions, resizes, config lag and failed syncs may move other items for balance, so
   they unsettle the group until it is quiet again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set

from protocol.messages import ConnectorTaskId
from tests.simulation.config_log import Item
from tests.simulation.ledger import InvariantViolation, RunLedger, Stop


def _spread(values: Iterable[int]) -> int:
    listed = list(values)
    return max(listed) - min(listed) if listed else 0


def _above_open(counts: Mapping[str, int], closed: Set[str]) -> int:
    """How far the most any worker holds is above the fewest an open worker holds."""
    opened = [count for worker, count in counts.items() if worker not in closed]
    return max(counts.values()) - min(opened) if opened else 0


def balance_problems(
    allocations: Mapping[str, set[Item]], closed: Set[str] = frozenset()
) -> list[str]:
    problems = []
    loads = list(allocations.values())
    if _spread(sum(isinstance(i, str) for i in load) for load in loads) > 1:
        problems.append("connectors per worker differ by more than one")
    totals = {w: sum(not isinstance(i, str) for i in load) for w, load in allocations.items()}
    if _above_open(totals, closed) > 1:
        problems.append("tasks per worker differ by more than one")
    connectors = {i.connector for load in loads for i in load if isinstance(i, ConnectorTaskId)}
    for connector in sorted(connectors):
        counts = {
            w: sum(isinstance(i, ConnectorTaskId) and i.connector == connector for i in load)
            for w, load in allocations.items()
        }
        if _above_open(counts, closed) > 1:
            problems.append(f"tasks of {connector} per worker differ by more than one")
    return problems


def check_quiet_state(
    configured: set[Item],
    ledger: RunLedger,
    allocations: Mapping[str, set[Item]],
    closed: Set[str] = frozenset(),
) -> None:
    """With no worker left nothing can run, and nothing may; nor may a hand-over still
    wait for a release that a quiet group will never make. `closed`: the workers closed
    to new tasks for their loads."""
    if ledger.waiting:
        raise InvariantViolation(f"quiet group: still waiting for releases {ledger.waiting}")
    running = set(ledger.owners)
    if not allocations:
        configured = set()
    if running != configured:
        missing = sorted(map(str, configured - running))
        extra = sorted(map(str, running - configured))
        raise InvariantViolation(
            f"quiet group: not running {missing}, running unconfigured {extra}"
        )
    problems = balance_problems(allocations, closed)
    if problems:
        loads = {w: sorted(map(str, items)) for w, items in allocations.items()}
        raise InvariantViolation(f"quiet group unbalanced: {problems}; {loads}")


class StabilityGuard:
    def __init__(self) -> None:
        self.settled = False
        self._concerned: set[Item] = set()

    def disturb(self) -> None:
        self.settled = False

    def settle(self) -> None:
        self.settled = True
        self._concerned = set()

    def concern(self, items: Iterable[Item]) -> None:
        self._concerned.update(items)

    def check(self, stop: Stop) -> None:
        if self.settled and stop.cause == "revoked" and stop.item not in self._concerned:
            raise InvariantViolation(
                f"t={stop.at_ms}ms: {stop.worker} stopped {stop.item}, "
                "which the change in progress does not concern"
            )
