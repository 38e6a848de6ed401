"""A task's lag behind its trigger, and the rule that calls a worker overloaded: behind
once a task commits fewer than half the batches its trigger asks for, never for a pause
shorter than a look at Spark, never while it waits for data."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from protocol.messages import ConnectorTaskId
from worker.runtime.trigger_lag import (
    LAG_FLOOR_S,
    OVERLOADED_MARK,
    Cadence,
    TriggerLag,
    overload_line,
    tasks_behind,
    trigger_lag,
)


def test_the_lag_is_the_time_since_the_newest_commit_beyond_one_interval() -> None:
    cadence = Cadence(interval_s=2.0, last_commit_at=100.0)
    assert trigger_lag(cadence, 101.5).lag_s == 0.0
    assert trigger_lag(cadence, 102.0).lag_s == 0.0
    assert trigger_lag(cadence, 107.0) == TriggerLag(5.0, 2.0)


def test_a_task_waiting_for_data_has_no_lag() -> None:
    idle = Cadence(interval_s=2.0, last_commit_at=100.0, waiting_for_data=True)
    assert trigger_lag(idle, 1_000.0).lag_s == 0.0


def test_behind_past_one_interval_and_never_under_the_floor() -> None:
    assert not TriggerLag(2.0, 2.0).behind
    assert TriggerLag(2.1, 2.0).behind
    assert not TriggerLag(LAG_FLOOR_S, 0.1).behind
    assert TriggerLag(LAG_FLOOR_S + 0.1, 0.1).behind


@given(
    interval=st.floats(0.1, 60.0),
    gap=st.floats(0.0, 600.0),
)
def test_behind_means_under_half_the_batches_the_trigger_asks_for(
    interval: float, gap: float
) -> None:
    """A task whose commits are `gap` apart commits interval/gap of the batches asked
    for; at the end of such a gap its lag tells whether that is under half."""
    lag = trigger_lag(Cadence(interval, last_commit_at=0.0), gap)
    if lag.behind:
        assert interval / gap < 0.5
    if gap > 2 * interval + LAG_FLOOR_S:
        assert lag.behind


def test_the_overload_line_names_the_tasks_most_behind_first() -> None:
    lags = {
        ConnectorTaskId("a", 0): TriggerLag(0.0, 2.0),
        ConnectorTaskId("b", 0): TriggerLag(5.0, 2.0),
        ConnectorTaskId("c", 0): TriggerLag(12.0, 2.0),
        ConnectorTaskId("d", 0): TriggerLag(3.0, 2.0),
        ConnectorTaskId("e", 0): TriggerLag(2.5, 2.0),
    }
    assert list(tasks_behind(lags)) == [
        ConnectorTaskId("c", 0),
        ConnectorTaskId("b", 0),
        ConnectorTaskId("d", 0),
        ConnectorTaskId("e", 0),
    ]
    line = overload_line(lags)
    assert line is not None and line.startswith(OVERLOADED_MARK)
    assert "4 of 5 running tasks" in line
    assert "c-0 12.0 s, b-0 5.0 s, d-0 3.0 s and 1 more" in line
    assert overload_line({ConnectorTaskId("a", 0): TriggerLag(0.5, 2.0)}) is None
    assert overload_line({}) is None
