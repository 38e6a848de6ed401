"""A virtual clock with the actions scheduled on it.

Actions run in time order, ties in the order they were scheduled, so a run is a pure
function of its script. An action marked as activity is something the group still has to
do (a rejoin, a restart, a delivery); heartbeats and time-outs are not, which is how
"the group is quiet" can be decided while heartbeats tick forever.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_ACTIONS_PER_INSTANT = 10_000


@dataclass(order=True)
class Scheduled:
    at_ms: int
    order: int
    action: Callable[[], None] = field(compare=False)
    activity: bool = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class EventLoop:
    def __init__(self) -> None:
        self.now_ms = 0
        self._queue: list[Scheduled] = []
        self._order = 0
        self._pending_activity = 0
        self._same_instant = 0

    def call_at(
        self, at_ms: int, action: Callable[[], None], *, activity: bool = True
    ) -> Scheduled:
        self._order += 1
        entry = Scheduled(max(at_ms, self.now_ms), self._order, action, activity)
        heapq.heappush(self._queue, entry)
        self._pending_activity += activity
        return entry

    def call_soon(self, action: Callable[[], None]) -> Scheduled:
        return self.call_at(self.now_ms, action)

    def cancel(self, entry: Scheduled | None) -> None:
        if entry is not None and not entry.cancelled:
            entry.cancelled = True
            self._pending_activity -= entry.activity

    @property
    def has_pending_activity(self) -> bool:
        return self._pending_activity > 0

    def run_until(self, at_ms: int) -> None:
        while self._queue and self._queue[0].at_ms <= at_ms:
            self._run_next()
        self.now_ms = max(self.now_ms, at_ms)

    def run_while(self, busy: Callable[[], bool], limit_ms: int) -> bool:
        """Run actions while `busy()`; False if still busy when time reaches `limit_ms`."""
        while busy():
            if not self._queue or self._queue[0].at_ms > limit_ms:
                self.now_ms = max(self.now_ms, limit_ms)
                return False
            self._run_next()
        return True

    def _run_next(self) -> None:
        """Raises if actions keep scheduling each other without time passing (a livelock)."""
        entry = heapq.heappop(self._queue)
        if entry.cancelled:
            return
        self._same_instant = self._same_instant + 1 if entry.at_ms == self.now_ms else 0
        if self._same_instant > MAX_ACTIONS_PER_INSTANT:
            raise RuntimeError(f"t={self.now_ms}ms: actions livelock without time passing")
        entry.cancelled = True
        self._pending_activity -= entry.activity
        self.now_ms = entry.at_ms
        entry.action()
