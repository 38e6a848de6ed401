"""The one log line that says a worker is ready (`/health` 200): before it, a request sent
as the REST server started waited through the warm-up and the join with nothing said."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.unit.herder.memory_cluster import (
    LoneCoordinator,
    RecordingRuntime,
    running_herder,
    until,
)

READY = "ready: /health answers 200"
AGAIN = "ready again: /health answers 200"
CONFIG = {"connector.class": "counting", "tasks.max": "2"}


class OutOfTouchCoordinator(LoneCoordinator):
    """A coordinator this worker can be told it lost touch with, once."""

    fence_once = False

    def must_fence(self, margin_s: float) -> bool:
        fence, self.fence_once = self.fence_once, False
        return fence


def ready_lines(caplog: pytest.LogCaptureFixture, start: str = READY) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(start)]


async def test_a_worker_says_once_that_it_is_ready_and_how_long_warm_up_took(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="herder")
    async with running_herder(tmp_path, LoneCoordinator()) as (herder, runtime):
        await until(lambda: herder.ready, "the worker joined")
        [line] = ready_lines(caplog)
        assert " s after start (warm-up " in line
        await herder.admin.create_connector("more", CONFIG)
        await until(lambda: len(runtime.running) == 2, "a rebalance ran the tasks")
        assert ready_lines(caplog) == [line]


async def test_the_ready_line_says_when_the_warm_up_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="herder")
    runtime = RecordingRuntime(warm_up_error=RuntimeError("no JVM here"))
    async with running_herder(tmp_path, LoneCoordinator(), runtime=runtime) as (herder, _):
        await until(lambda: herder.ready, "the worker joined")
        [line] = ready_lines(caplog)
        assert "(warm-up failed after " in line


async def test_a_worker_that_was_unhealthy_says_when_it_is_ready_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="herder")
    coordinator = OutOfTouchCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("fenced", CONFIG)
        await until(lambda: len(runtime.running) == 2, "work to fence")
        generation = coordinator.generation
        coordinator.fence_once = True
        await until(lambda: coordinator.generation > generation, "a rejoin after fencing")
        await until(lambda: herder.ready, "ready again")
        assert len(ready_lines(caplog)) == 1
        [again] = ready_lines(caplog, AGAIN)
        assert "(it was: fenced: the group coordinator did not answer in time)" in again
