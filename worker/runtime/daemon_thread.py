"""One daemon thread that runs blocking calls, one at a time, for an event loop.

`asyncio.to_thread` runs calls on the loop's default executor, whose threads the
interpreter joins before it exits: one py4j call that does not answer (the task monitor's
look at a query that was stopping answered after 30-45 s) then holds the whole process
up, past the pod's grace period. A daemon thread is not joined, so whoever awaits its
calls can give up on one and exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Call = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class DaemonThread:
    """Started on the first call; lives as long as the process."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def call(self, function: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._calls.put((function, loop, future))
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
            self._thread.start()
        return await future

    def _serve(self) -> None:
        while True:
            function, loop, future = self._calls.get()
            outcome: tuple[Any, BaseException | None]
            try:
                outcome = (function(), None)
            except BaseException as exc:  # handed to the caller, whatever it is
                outcome = (None, exc)
            with contextlib.suppress(RuntimeError):  # the caller's loop is closed
                loop.call_soon_threadsafe(_settle, future, *outcome)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the caller's loop; a caller that gave up (cancelled) has no use for it."""
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
