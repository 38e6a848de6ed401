"""Waiting for a condition in a test: the one polling policy every test uses.

Look every `interval_s` until the condition holds, give up at a deadline, and on giving
up fail with what was awaited and the last thing seen. CI keeps a failed test's output
but not the workers' logs, so that message is often all there is to tell a slow run from
a wrong one. Never sleep for a fixed time in place of a condition: a sleep long enough
for a busy CI machine makes every quiet run slow, and one short enough fails there.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Generic, TypeGuard, TypeVar, overload

import httpx

T = TypeVar("T")

TRANSIENT = (httpx.HTTPError, OSError, KeyError, ValueError)
"""What reading a thing that is not up yet raises (a worker still starting or restarting,
a file half written, a body without the field yet): one more "not yet", and the last
thing seen if it is the last answer."""

SHOWN_CHARS = 2_000
"""How much of the last value the failure shows: enough for a status list, not a log."""


class _Poll(Generic[T]):
    """One wait's deadline, its condition and its last observation: everything but the
    pause between looks, which is all the sync and async loops differ in."""

    def __init__(self, what: str, timeout_s: float, until: Callable[[T], object]) -> None:
        self._what = what
        self._timeout_s = timeout_s
        self._until = until
        self._deadline = time.monotonic() + timeout_s
        self._last = "nothing: the condition was never evaluated"

    @contextlib.contextmanager
    def look(self) -> Iterator[None]:
        """One look; a `TRANSIENT` error ends it as "not yet"."""
        try:
            yield
        except TRANSIENT as exc:
            self._last = f"{type(exc).__name__}: {exc}"

    def enough(self, value: T | None) -> TypeGuard[T]:
        if value is not None and self._until(value):
            return True
        shown = repr(value)
        self._last = shown if len(shown) <= SHOWN_CHARS else shown[:SHOWN_CHARS] + "..."
        return False

    def fail_if_expired(self) -> None:
        if time.monotonic() >= self._deadline:
            raise AssertionError(
                f"timed out after {self._timeout_s:g} s waiting for {self._what}; "
                f"last seen: {self._last}"
            )


def wait_until(
    observe: Callable[[], T | None],
    timeout_s: float,
    *,
    what: str,
    until: Callable[[T], object] = bool,
    interval_s: float = 0.5,
) -> T:
    """Call `observe` until `until` holds for what it returns, and return that value.

    `observe` returns what the failure should show (a list of task states, a row count)
    and `until` says when it is enough; by default a truthy value is. None, or raising
    one of `TRANSIENT`, is "not yet" whatever `until` says. Fails with `what` and the
    last value after `timeout_s`.
    """
    poll = _Poll(what, timeout_s, until)
    while True:
        with poll.look():
            value = observe()
            if poll.enough(value):
                return value
        poll.fail_if_expired()
        time.sleep(interval_s)


@overload
async def wait_until_async(
    observe: Callable[[], Awaitable[T | None]],
    timeout_s: float,
    *,
    what: str,
    until: Callable[[T], object] = bool,
    interval_s: float = 0.5,
) -> T: ...


@overload
async def wait_until_async(
    observe: Callable[[], T | None],
    timeout_s: float,
    *,
    what: str,
    until: Callable[[T], object] = bool,
    interval_s: float = 0.5,
) -> T: ...


async def wait_until_async(
    observe: Callable[[], T | Awaitable[T | None] | None],
    timeout_s: float,
    *,
    what: str,
    until: Callable[[T], object] = bool,
    interval_s: float = 0.5,
) -> T:
    """`wait_until` for a test that shares its event loop with the code under test: the
    pause between looks yields to that loop instead of blocking it, and `observe` may be
    a coroutine function (to ask a group coordinator, say)."""
    poll = _Poll(what, timeout_s, until)
    while True:
        with poll.look():
            observed = observe()
            value = await observed if inspect.isawaitable(observed) else observed
            if poll.enough(value):
                return value
        poll.fail_if_expired()
        await asyncio.sleep(interval_s)
