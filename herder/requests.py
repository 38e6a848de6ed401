"""REST requests enter the herder through a queue that its group loop drains.

The requests run one at a time, in a lane of their own beside the loop's steps
(`herder.member.lifecycle`): a write answers once the config topic has it, as in Kafka
Connect, not once the rebalance and the task starts it causes are done. A write's turn
ends once its records are sent; its caller waits for them to be acknowledged and read
back outside the lane (`herder.admin.cluster_admin.Later`), so the next write runs meanwhile and a
burst of writes shares those round trips. A request
that arrives before the worker has joined the group waits for the join (up to a
time-out) instead of failing because no leader is known yet. The automatic restarts
use a queue of their own, which the loop drains between rebalances.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from herder.errors import HerderError

DEFAULT_REQUEST_TIMEOUT_S = 90.0
"""Kafka Connect's REST request time-out."""

_Result = TypeVar("_Result")
_Request = tuple[Callable[[], Awaitable[Any]], "asyncio.Future[Any]"]


class SubmitRequest(Protocol):
    """`RequestQueue.submit`: run the request in the group loop and wait for its result."""

    def __call__(self, request: Callable[[], Awaitable[_Result]]) -> Awaitable[_Result]: ...


class RequestTimedOut(HerderError):
    def __init__(self, timeout_s: float) -> None:
        super().__init__(
            "Cannot complete request because of a conflicting operation (e.g. worker "
            f"rebalance): the worker has not been able to serve it within {timeout_s:g} s"
        )


class WorkerStopping(HerderError):
    def __init__(self) -> None:
        super().__init__("the worker is shutting down; send the request to another worker")


class RequestQueue:
    """Requests in arrival order; `run_pending` runs them one at a time in the loop."""

    def __init__(self, timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> None:
        self._timeout_s = timeout_s
        self._pending: deque[_Request] = deque()
        self._closed = False
        self.arrived = asyncio.Event()

    async def submit(self, request: Callable[[], Awaitable[_Result]]) -> _Result:
        """Queue `request` and wait for the loop to have run it; its exception, if any,
        is raised here. A request not yet started when the time-out passes (or its caller
        goes away) never runs."""
        if self._closed:
            raise WorkerStopping()
        done: asyncio.Future[_Result] = asyncio.get_running_loop().create_future()
        self._pending.append((request, done))
        self.arrived.set()
        try:
            async with asyncio.timeout(self._timeout_s):
                return await asyncio.shield(done)
        except TimeoutError:
            raise RequestTimedOut(self._timeout_s) from None
        finally:
            done.cancel()

    async def run_pending(self) -> None:
        """Run what is queued now; what arrives meanwhile waits for the next call."""
        self.arrived.clear()
        for _ in range(len(self._pending)):
            request, done = self._pending.popleft()
            if done.done():
                continue
            try:
                result = await request()
            except Exception as exc:
                if not done.done():
                    done.set_exception(exc)
            else:
                if not done.done():
                    done.set_result(result)

    def close(self) -> None:
        """Refuse new requests and fail the queued ones: the loop will not run them."""
        self._closed = True
        while self._pending:
            _, done = self._pending.popleft()
            if not done.done():
                done.set_exception(WorkerStopping())
