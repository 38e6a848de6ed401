"""A stop that arrives while a loop waits for its helper task to end must stop the loop."""

from __future__ import annotations

import asyncio

from herder.cancellation import cancel_and_wait


async def slow_to_stop() -> None:
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        await asyncio.sleep(0.05)
        raise


async def test_the_callers_own_cancellation_is_not_swallowed() -> None:
    rounds = 0

    async def loop() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            helper = asyncio.create_task(slow_to_stop())
            await asyncio.sleep(0)
            await cancel_and_wait(helper)

    running = asyncio.create_task(loop())
    await asyncio.sleep(0.01)
    running.cancel()
    done, _ = await asyncio.wait([running], timeout=2)
    assert running in done and running.cancelled()
    assert rounds == 1


async def test_a_finished_or_missing_task_is_fine() -> None:
    async def fails() -> None:
        raise RuntimeError("already failed")

    failed = asyncio.create_task(fails())
    await asyncio.sleep(0)
    await cancel_and_wait(failed)
    await cancel_and_wait(None)
    assert failed.done()
