"""A working copy of one round's allocation over the eligible workers, and how it is balanced.

Balanced means three things at once: connectors per worker differ by at most one, tasks per
worker differ by at most one, and the tasks of every single connector are spread so that
no worker holds two more of them than another (Kafka Connect only balances totals, which
lets one connector pile up on one worker: KAFKA-17049). All three can always be met.

Tasks are held as `connector -> set of task numbers` per worker because integers hash and
compare in C, while `ConnectorTaskId.__eq__` runs Python code; at 100k tasks that is the
difference between milliseconds and seconds.

Moving a task the worker does not run yet (placed earlier in the same round) is free;
moving one it runs costs a revocation, so every balancing step prefers free moves.

With the members' measured loads (`weigh`, protocol v5), an overloaded worker is *closed*
while another has room (`herder.assignor.room`): it takes no task, neither a new one nor
one moved for balance, and the task counts are balanced over the open workers only, which
may leave a closed worker below them. It still gives tasks when it holds more than the
open ones, as count balance always asked. Among workers holding as many tasks, the least
loaded is given the next one. Equal or unknown loads leave all of this as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from heapq import heapify, heappop, heappush

from herder.assignor.room import closed_workers, tie_load
from protocol.messages import Allocation, ConnectorTaskId

TaskSets = dict[str, set[int]]
"""Task numbers by connector."""

_NOTHING: frozenset[int] = frozenset()


class LoadModel:
    """Who holds what at the end of the round being planned; workers are list indexes."""

    def __init__(self, workers: Sequence[str]) -> None:
        self.workers: list[str] = list(workers)
        size = len(self.workers)
        self.tasks: list[TaskSets] = [{} for _ in range(size)]
        self.totals: list[int] = [0] * size
        self.connectors: list[set[str]] = [set() for _ in range(size)]
        self.holders: dict[str, dict[int, int]] = {}
        """connector -> worker -> how many of its tasks the worker holds (only non-zero)."""
        self._running: list[Mapping[str, Set[int]]] = [{} for _ in range(size)]
        self._running_connectors: list[Set[str]] = [frozenset() for _ in range(size)]
        self._free_tasks: list[TaskSets] = [{} for _ in range(size)]
        self._rank: list[int] = [1] * size
        self._load: list[int] = [0] * size
        self._closed: frozenset[int] = frozenset()
        self._open: list[int] = list(range(size))
        """The workers that may take tasks: all of them unless `weigh` closed some."""
        self._scan_from: dict[int, tuple[Sequence[str], int]] = {}
        """Where the last search for a shiftable connector of a giver succeeded: the taker
        only gains connectors, so the ones before it would fail again."""

    def keep(self, worker: int, tasks: Mapping[str, Set[int]], connectors: Set[str]) -> None:
        """Load what a worker runs and may go on running (task sets must not be empty)."""
        self._running[worker] = tasks
        self._running_connectors[worker] = connectors
        held = self.tasks[worker]
        holders = self.holders
        total = 0
        for connector, numbers in tasks.items():
            held[connector] = set(numbers)
            total += len(numbers)
            counts = holders.get(connector)
            if counts is None:
                counts = holders[connector] = {}
            counts[worker] = len(numbers)
        self.totals[worker] += total
        self.connectors[worker] = set(connectors)

    def prefer(self, workers: Iterable[int]) -> None:
        """These workers win ties when work is placed (KIP-415 candidates for lost work)."""
        for worker in workers:
            self._rank[worker] = 0

    def weigh(self, loads: Sequence[int]) -> None:
        """The workers' measured loads (`Subscription.load`), in worker order."""
        self._load = [tie_load(load) for load in loads]
        self._closed = closed_workers(loads)
        self._open = [w for w in range(len(self.workers)) if w not in self._closed]

    def add_task(self, worker: int, connector: str, task: int) -> None:
        held = self.holders.get(connector)
        if held is None:
            held = self.holders[connector] = {}
        held[worker] = held.get(worker, 0) + 1
        self._hold(worker, connector, (task,))

    def _hold(self, worker: int, connector: str, tasks: Sequence[int]) -> None:
        """Record tasks as the worker's, except in `holders`, which the caller has counted."""
        numbers = self.tasks[worker].get(connector)
        if numbers is None:
            self.tasks[worker][connector] = set(tasks)
        else:
            numbers.update(tasks)
        self.totals[worker] += len(tasks)
        running = self._running[worker].get(connector)
        free = tasks if running is None else [t for t in tasks if t not in running]
        if free:
            self._free_tasks[worker].setdefault(connector, set()).update(free)

    def remove_task(self, worker: int, connector: str, task: int) -> None:
        numbers = self.tasks[worker][connector]
        numbers.remove(task)
        if not numbers:
            del self.tasks[worker][connector]
        self.totals[worker] -= 1
        held = self.holders[connector]
        held[worker] -= 1
        if not held[worker]:
            del held[worker]
            if not held:
                del self.holders[connector]
        free = self._free_tasks[worker].get(connector)
        if free is not None and task in free:
            free.remove(task)
            if not free:
                del self._free_tasks[worker][connector]

    def add_connector(self, worker: int, connector: str) -> None:
        self.connectors[worker].add(connector)

    def place_tasks(self, pending: Mapping[str, Iterable[int]]) -> None:
        """Give each task to a worker holding the fewest of its connector, then fewest overall.

        Starting from a balanced model this keeps it balanced for a new connector, which is
        what lets a connector be added without stopping anything else.
        """
        if not self.workers:
            return
        heap = [(self.totals[w], self._rank[w], self._load[w], w) for w in self._open]
        heapify(heap)
        for connector in sorted(pending):
            numbers = sorted(pending[connector])
            if numbers:
                self._fill(heap, connector, numbers)

    def _fill(
        self, heap: list[tuple[int, int, int, int]], connector: str, numbers: list[int]
    ) -> None:
        held = self.holders.setdefault(connector, {})
        level = self._low(held)
        parked: list[tuple[int, int, int, int]] = []
        chosen: dict[int, list[int]] = {}
        for task in numbers:
            while True:
                if not heap:
                    level += 1
                    heap.extend(parked)
                    heapify(heap)
                    parked = []
                total, rank, load, worker = heappop(heap)
                if held.get(worker, 0) <= level:
                    break
                parked.append((total, rank, load, worker))
            held[worker] = held.get(worker, 0) + 1
            mine = chosen.get(worker)
            if mine is None:
                chosen[worker] = [task]
            else:
                mine.append(task)
            parked.append((total + 1, rank, load, worker))
        for worker, tasks in chosen.items():
            self._hold(worker, connector, tasks)
        for entry in parked:
            heappush(heap, entry)

    def place_connectors(self, names: Iterable[str]) -> None:
        """Fewest connectors first; among equals the worker with the fewest tasks."""
        if not self.workers:
            return
        heap = [
            (len(self.connectors[w]), self.totals[w], self._rank[w], w)
            for w in range(len(self.workers))
        ]
        heapify(heap)
        for name in sorted(names):
            count, total, rank, worker = heappop(heap)
            self.connectors[worker].add(name)
            heappush(heap, (count + 1, total, rank, worker))

    def _low(self, held: Mapping[int, int]) -> int:
        """The fewest tasks of one connector an open worker holds (`held`: by worker)."""
        if not self._closed:
            return min(held.values()) if len(held) == len(self.workers) else 0
        opened = [count for worker, count in held.items() if worker not in self._closed]
        return min(opened) if len(opened) == len(self._open) else 0

    def is_balanced(self) -> bool:
        size = len(self.workers)
        if size < 2:
            return True
        if max(self.totals) - min(self.totals[w] for w in self._open) > 1:
            return False
        counts = [len(names) for names in self.connectors]
        if max(counts) - min(counts) > 1:
            return False
        return all(max(held.values()) - self._low(held) <= 1 for held in self.holders.values())

    def balance(self) -> None:
        """Make the model balanced with as few moves of running work as this heuristic finds."""
        if len(self.workers) < 2:
            return
        self.place_tasks(self._trim_connector_spread())
        self._even_task_totals()
        self._even_connector_counts()

    def _trim_connector_spread(self) -> dict[str, list[int]]:
        """Take away each connector's tasks above its fair share; the caller re-places them.

        The workers that already hold the most keep the rounded-up shares, so the fewest
        tasks leave their current worker.
        """
        size = len(self.workers)
        taken: dict[str, list[int]] = {}
        for connector in sorted(self.holders):
            held = self.holders[connector]
            if max(held.values()) - self._low(held) < 2:
                continue
            floor, extra = divmod(sum(held.values()), size)
            order = sorted(held, key=lambda w: (-held[w], self.totals[w], w))
            for worker in order:
                count = held[worker]
                cap = floor
                if extra and count > floor:
                    cap += 1
                    extra -= 1
                if count > cap:
                    taken.setdefault(connector, []).extend(
                        self._take(worker, connector, count - cap)
                    )
        return taken

    def _take(self, worker: int, connector: str, how_many: int) -> list[int]:
        running = self._running[worker].get(connector, _NOTHING)
        chosen = sorted(self.tasks[worker][connector], key=lambda t: (t in running, -t))
        for task in chosen[:how_many]:
            self.remove_task(worker, connector, task)
        return chosen[:how_many]

    def _even_task_totals(self) -> None:
        """Move tasks from the fullest to the emptiest worker until totals differ by <= 1.

        Only a task of a connector the giver holds more of than the taker moves, which
        leaves every connector's spread as it is; such a connector always exists when the
        giver holds more tasks in total.
        """
        lows = [(self.totals[w], self._rank[w], self._load[w], w) for w in self._open]
        highs = [(-self.totals[w], w) for w in range(len(self.workers))]
        heapify(lows)
        heapify(highs)
        while True:
            while lows[0][0] != self.totals[lows[0][3]]:
                heappop(lows)
            while -highs[0][0] != self.totals[highs[0][1]]:
                heappop(highs)
            taker, giver = lows[0][3], highs[0][1]
            if self.totals[giver] - self.totals[taker] < 2:
                return
            connector, task = self._pick_shiftable(giver, taker)
            self.remove_task(giver, connector, task)
            self.add_task(taker, connector, task)
            for worker in (giver, taker):
                if worker not in self._closed:
                    heappush(
                        lows, (self.totals[worker], self._rank[worker], self._load[worker], worker)
                    )
                heappush(highs, (-self.totals[worker], worker))

    def _pick_shiftable(self, giver: int, taker: int) -> tuple[str, int]:
        mine, theirs = self.tasks[giver], self.tasks[taker]
        for connector, free in self._free_tasks[giver].items():
            if len(mine[connector]) > len(theirs.get(connector, _NOTHING)):
                return connector, max(free)
        order, start = self._scan_from.get(giver, ((), 0))
        found = self._scan_shiftable(giver, taker, order, start)
        if found is None:
            # A fresh copy of the giver's connectors costs O(connectors): made only when
            # the remembered order has none left, never on every call (at 10 workers x 100k
            # tasks plus a joiner, a copy per moved task was over half of the round). Each
            # giver starts in its own slice of the order: from a common start every giver
            # walked past the connectors the others had already given the taker.
            order = list(mine)
            start = giver * len(order) // len(self.workers)
            found = self._scan_shiftable(giver, taker, order, start)
        if found is None:
            raise AssertionError("a fuller worker always holds more of some connector")
        return found

    def _scan_shiftable(
        self, giver: int, taker: int, order: Sequence[str], start: int
    ) -> tuple[str, int] | None:
        """The first connector in `order`, cyclically from `start`, the giver holds more of
        than the taker, with the giver's highest task of it; remembered for the next call."""
        mine, theirs = self.tasks[giver], self.tasks[taker]
        for step in range(len(order)):
            position = (start + step) % len(order)
            numbers = mine.get(order[position])
            if numbers and len(numbers) > len(theirs.get(order[position], _NOTHING)):
                self._scan_from[giver] = (order, position)
                return order[position], max(numbers)
        return None

    def _even_connector_counts(self) -> None:
        """Move connectors from the fullest to the emptiest worker, not-yet-running ones first."""
        size = range(len(self.workers))
        free: dict[int, set[str]] = {}
        """Per giver, its connectors it does not run yet: computed once, then kept current."""
        while True:
            giver = max(size, key=lambda w: (len(self.connectors[w]), -w))
            taker = min(
                size, key=lambda w: (len(self.connectors[w]), self.totals[w], self._rank[w], w)
            )
            if len(self.connectors[giver]) - len(self.connectors[taker]) < 2:
                return
            names = self.connectors[giver]
            spare = free.get(giver)
            if spare is None:
                spare = free[giver] = names - self._running_connectors[giver]
            name = max(spare) if spare else max(names)
            names.remove(name)
            spare.discard(name)
            self.connectors[taker].add(name)
            if taker in free and name not in self._running_connectors[taker]:
                free[taker].add(name)

    def allocation(self, worker: int) -> Allocation:
        return Allocation(
            frozenset(self.connectors[worker]),
            frozenset(
                ConnectorTaskId(connector, task)
                for connector, numbers in self.tasks[worker].items()
                for task in numbers
            ),
        )
