"""Wakes the group loop when an automatic restart is due (`herder.tasks.auto_restart`).

A restart must not run beside the loop (a revocation or a config change could then
interleave with it), so the timer only queues it: the restarts run as a request in the
herder's `RequestQueue`, which the loop drains between rebalances, one request at a time.
A request the loop cannot serve in time is queued again; spurious wake-ups are harmless,
since what runs takes only what is due by then and arms the timer for the next.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from herder.cancellation import cancel_and_wait
from herder.requests import RequestTimedOut, WorkerStopping

log = logging.getLogger(__name__)

Submit = Callable[[Callable[[], Awaitable[None]]], Awaitable[None]]
"""`RequestQueue.submit`: run the request in the group loop and wait for it."""


class RestartTimer:
    """One timer; when it fires, `run_due` is submitted to the group loop."""

    def __init__(self, submit: Submit, run_due: Callable[[], Awaitable[None]]) -> None:
        self._submit = submit
        self._run_due = run_due
        self._timer: asyncio.TimerHandle | None = None
        self._queued: set[asyncio.Task[None]] = set()
        self._closed = False

    def arm(self, delay_s: float | None) -> None:
        """Fire in `delay_s` (instead of any earlier arming); None: not at all."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if delay_s is not None and not self._closed:
            self._timer = asyncio.get_running_loop().call_later(delay_s, self._fire)

    def _fire(self) -> None:
        self._timer = None
        queued = asyncio.create_task(self._queue(), name="auto-restart")
        self._queued.add(queued)
        queued.add_done_callback(self._queued.discard)

    async def _queue(self) -> None:
        try:
            await self._submit(self._run_due)
        except RequestTimedOut:
            log.info("automatic restarts waited for the group loop too long; queueing again")
            self.arm(0.0)
        except WorkerStopping:
            return
        except Exception:
            log.exception("automatic restarts failed")

    async def close(self) -> None:
        self._closed = True
        self.arm(None)
        for queued in list(self._queued):
            await cancel_and_wait(queued)
