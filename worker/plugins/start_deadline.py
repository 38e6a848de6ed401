"""How long one task's start may still take, and the signal that it is over.

A start runs on a thread that nothing can kill (py4j calls, a database's login, a Kafka
client's bootstrap). The runtime gives up on it once `task.start.timeout.ms` has passed,
or at once when the task is stopped while it starts (revoked, deleted, restarted); the
thread learns it here. Whatever a start waits for (a connection's back-off, a fetch, a
statement) waits on this object rather than on `time.sleep`, and takes no longer than
`remaining()`; a launch that returns after its start was given up has its query stopped
and its claim released by the runtime, so giving up never leaves a query behind.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Final

START_TIMEOUT_KEY: Final = "task.start.timeout.ms"
START_TIMEOUT_MS_DEFAULT: Final = 60_000


class StartCancelledError(RuntimeError):
    """The start was given up: it ran past its deadline, or its task was stopped."""


class StartDeadline:
    """One start's deadline, which `cancel` brings forward to now. Thread-safe: the
    runtime cancels on its event loop, the start's thread waits and asks."""

    def __init__(
        self,
        timeout_s: float | None = None,
        what: str = "its deadline",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`what` names the bound in the message of a start that runs past it."""
        self._clock = clock
        self._ends_at = math.inf if timeout_s is None else clock() + timeout_s
        self._cancelled = threading.Event()
        self._why = f"The start ran past {what} and was cancelled"

    def cancel(self, why: str) -> None:
        """End the start now; `why` is what its failure says (the first reason stays)."""
        if not self._cancelled.is_set():
            self._why = why
            self._cancelled.set()

    @property
    def over(self) -> bool:
        return self._cancelled.is_set() or self._clock() >= self._ends_at

    @property
    def why(self) -> str:
        return self._why

    def remaining(self) -> float:
        """Seconds the start may still take (`math.inf`: no bound; 0 once over)."""
        if self._cancelled.is_set():
            return 0.0
        return max(0.0, self._ends_at - self._clock())

    def wait(self, seconds: float) -> bool:
        """Wait `seconds`, or less if the start ends sooner; whether it is over."""
        pause = min(seconds, self.remaining())
        self._cancelled.wait(None if math.isinf(pause) else max(0.0, pause))
        return self.over

    def check(self) -> None:
        """Raise `StartCancelledError` once the start is over."""
        if self.over:
            raise StartCancelledError(self._why)
