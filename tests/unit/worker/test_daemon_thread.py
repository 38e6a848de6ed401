"""Blocking calls on one daemon thread, awaited from an event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from worker.runtime.daemon_thread import DaemonThread


async def test_calls_run_in_order_on_one_daemon_thread() -> None:
    runner = DaemonThread("test-daemon")
    threads = [await runner.call(threading.current_thread) for _ in range(3)]
    assert len(set(threads)) == 1
    assert threads[0] is not threading.current_thread() and threads[0].daemon
    assert threads[0].name == "test-daemon"


async def test_an_error_reaches_the_caller_and_the_thread_serves_on() -> None:
    runner = DaemonThread("test-daemon")

    def fail() -> None:
        raise ValueError("from the thread")

    with pytest.raises(ValueError, match="from the thread"):
        await runner.call(fail)
    assert await runner.call(lambda: 42) == 42


async def test_a_caller_may_give_up_on_a_call_that_does_not_answer() -> None:
    runner = DaemonThread("test-daemon")
    answer = threading.Event()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(runner.call(answer.wait), 0.1)
    answer.set()
    assert await runner.call(lambda: "next") == "next"
