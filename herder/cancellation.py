"""Stopping a helper task without losing the caller's own cancellation."""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel `task` and return once it has finished.

    Awaiting a cancelled task under `suppress(CancelledError)` also swallows a
    cancellation of the caller that arrives meanwhile: a herder stop that came just as
    the group loop was rejoining hung that way, the loop running on after swallowing its
    own cancellation. `asyncio.wait` never raises the task's outcome, so only the caller's
    own cancellation propagates.
    """
    if task is None:
        return
    task.cancel()
    await asyncio.wait([task])
