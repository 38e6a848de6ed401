"""Who runs which item at this instant, and what the running cost.

The ledger is the simulator's ground truth: a worker starts or stops an item only through
it, so "no item runs twice at the same instant" is checked at the moment of every start.
An item does useful work only `startup_ms` after it was started (a Spark job has to be
submitted); downtime integrates, over virtual time, the number of configured items that
are not doing useful work, which is what every restart costs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocol.messages import ConnectorTaskId
from tests.simulation.config_log import Item
from tests.simulation.events import EventLoop, Scheduled


class InvariantViolation(AssertionError):
    """The simulated group broke a property that must hold in every history."""


@dataclass(frozen=True)
class Stop:
    at_ms: int
    item: Item
    worker: str
    cause: str
    """"revoked" (by the leader), "rejoin" (eager), "crash", "shutdown" or "expelled"."""


class RunLedger:
    def __init__(self, loop: EventLoop, startup_ms: int) -> None:
        self._loop = loop
        self._startup_ms = startup_ms
        self.owners: dict[Item, str] = {}
        self.starts = 0
        self.stops = 0
        self.task_stops = 0
        self.rebalance_task_stops = 0
        """Task stops a rebalance caused, not the worker's own death or shutdown."""
        self._configured: set[Item] = set()
        self._serving: set[Item] = set()
        self._warming: dict[Item, Scheduled] = {}
        self._idle = 0
        self._idle_item_ms = 0
        self._since_ms = 0
        self.on_stop: Callable[[Stop], None] | None = None
        self._waiters: dict[Item, tuple[str, Callable[[Item], None]]] = {}

    @property
    def downtime_s(self) -> float:
        self._account()
        return self._idle_item_ms / 1000

    def configure(self, items: set[Item]) -> None:
        self._account()
        self._configured = set(items)
        self._idle = len(self._configured - self._serving)

    def start(self, item: Item, worker: str) -> None:
        holder = self.owners.get(item)
        if holder is not None:
            raise InvariantViolation(
                f"t={self._loop.now_ms}ms: {worker} starts {item} while {holder} runs it"
            )
        self.owners[item] = worker
        self.starts += 1
        self._warming[item] = self._loop.call_at(
            self._loop.now_ms + self._startup_ms, lambda: self._serve(item), activity=False
        )

    def when_released(self, item: Item, worker: str, start: Callable[[Item], None]) -> None:
        """`worker` starts `item` through `start` once nobody runs it: at once if nobody
        does now, else when its owner stops it (its claim's release). A second waiter for
        one item means two workers were handed it at once, which no round may do."""
        if item not in self.owners:
            start(item)
            return
        if item in self._waiters:
            raise InvariantViolation(
                f"t={self._loop.now_ms}ms: {worker} and {self._waiters[item][0]} both wait "
                f"for {item}"
            )
        self._waiters[item] = (worker, start)

    def forget_waiter(self, item: Item, worker: str) -> None:
        if self._waiters.get(item, ("",))[0] == worker:
            del self._waiters[item]

    @property
    def waiting(self) -> dict[Item, str]:
        return {item: worker for item, (worker, _) in self._waiters.items()}

    def stop(self, item: Item, worker: str, cause: str) -> None:
        self._account()
        del self.owners[item]
        self.stops += 1
        is_task = isinstance(item, ConnectorTaskId)
        self.task_stops += is_task
        self.rebalance_task_stops += is_task and cause not in ("crash", "shutdown")
        self._loop.cancel(self._warming.pop(item, None))
        if item in self._serving:
            self._serving.remove(item)
            self._idle += item in self._configured
        if self.on_stop is not None:
            self.on_stop(Stop(self._loop.now_ms, item, worker, cause))
        waiter = self._waiters.pop(item, None)
        if waiter is not None:
            waiter[1](item)

    def _serve(self, item: Item) -> None:
        self._account()
        del self._warming[item]
        self._serving.add(item)
        self._idle -= item in self._configured

    def _account(self) -> None:
        now = self._loop.now_ms
        self._idle_item_ms += (now - self._since_ms) * self._idle
        self._since_ms = now
