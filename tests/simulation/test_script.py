from __future__ import annotations

import pytest

from tests.simulation.cluster import SimCluster
from tests.simulation.script import duration_ms, run_script


def test_durations_accept_ms_seconds_and_minutes() -> None:
    assert [duration_ms(t) for t in ("250ms", "3s", "2m")] == [250, 3_000, 120_000]
    with pytest.raises(ValueError, match="not a duration"):
        duration_ms("3 hours")


def test_each_step_reports_the_rounds_it_ran() -> None:
    steps = run_script(
        SimCluster(),
        """
        connector A 2   # before any worker: no round
        join W1
        settle
        """,
    )
    assert [s.line for s in steps] == ["connector A 2", "join W1", "settle"]
    assert [len(s.rounds) for s in steps] == [0, 0, 1]


def test_unknown_steps_are_rejected_with_the_line() -> None:
    with pytest.raises(ValueError, match="unknown step 'explode'"):
        run_script(SimCluster(), "explode W1")
