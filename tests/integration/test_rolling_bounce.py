"""The rolling-bounce harness of deploy/ in its smallest mode: a real StatefulSet-style
rollout hands each pod its own tasks back without waiting for the delay, keeps every
task's output exactly-once and never runs a task on two workers."""

from __future__ import annotations

import pytest

from deploy import rolling_bounce

pytestmark = pytest.mark.integration


DELAY_S = 120


def test_a_rollout_with_stable_identities_keeps_every_task_exactly_once() -> None:
    (report,) = rolling_bounce.main(
        ["--modes", "stable", "--workers", "2", "--tasks", "4", "--delay-ms", f"{DELAY_S * 1000}"]
    )
    assert report.stops_per_task > 0, "the rollout stopped nothing: no bounce was observed"
    assert report.worst_task_downtime_s < DELAY_S, "a bounced worker's tasks waited for the delay"
    assert not report.ran_twice
    assert report.exactly_once
