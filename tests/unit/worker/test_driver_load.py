"""The load a worker reports to its leader (`worker.driver_load`): overloaded when a task
that has committed a batch is behind its trigger, otherwise its tasks' demand on the
driver."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from protocol.messages import OVERLOADED_LOAD, ConnectorTaskId
from protocol.wire import INT16_MAX
from worker.driver_load import driver_load
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import Cadence, TriggerLag, tasks_behind, trigger_lag

NOW = 1_000.0


def task(n: int) -> ConnectorTaskId:
    return ConnectorTaskId(f"c{n}", 0)


def on_cadence(interval_s: float = 2.0) -> TriggerLag:
    return trigger_lag(Cadence(interval_s, last_commit_at=NOW - 0.5), NOW)


def behind(interval_s: float = 2.0) -> TriggerLag:
    return trigger_lag(Cadence(interval_s, last_commit_at=NOW - 3 * interval_s - 1), NOW)


def batch(
    duration_ms: int, rows_per_s: float = 5.0, batch_id: int = 3, committed: bool = True
) -> TaskProgress:
    committed_at = NOW - 0.5 if committed else None
    return TaskProgress(batch_id, 20, rows_per_s, rows_per_s, duration_ms, None, committed_at)


def test_a_worker_with_no_task_has_no_load() -> None:
    assert driver_load({}, {}) == 0


def test_each_task_asks_its_batch_time_over_its_interval() -> None:
    lags = {task(0): on_cadence(2.0), task(1): on_cadence(4.0)}
    progress = {task(0): batch(500), task(1): batch(400)}
    assert driver_load(lags, progress) == 250 + 100


def test_a_task_asks_at_most_the_whole_driver_and_on_cadence_stays_under_overloaded() -> None:
    lags = {task(n): on_cadence() for n in range(3)}
    progress = {task(n): batch(1_900) for n in range(3)}
    assert driver_load(lags, progress) == OVERLOADED_LOAD - 1
    assert driver_load({task(0): on_cadence()}, {task(0): batch(9_000)}) == 999


def test_a_task_behind_its_trigger_makes_the_worker_overloaded() -> None:
    lags = {task(0): on_cadence(), task(1): behind()}
    progress = {task(0): batch(100), task(1): batch(100)}
    assert driver_load(lags, progress) == OVERLOADED_LOAD
    many = {task(n): behind() for n in range(40)}
    assert driver_load(many, {t: batch(1_500) for t in many}) == 30_000


def test_a_task_still_waiting_for_its_first_batch_here_overloads_nothing() -> None:
    """Its lag runs from its query's start: that is its start-up, not a short driver.
    A task restarted from a checkpoint has a batch id but no batch of this start."""
    lags = {task(0): behind(), task(1): behind()}
    assert driver_load(lags, {}) == 0
    restarted = {task(0): batch(500, committed=False), task(1): batch(500, committed=False)}
    assert driver_load(lags, restarted) == 500
    assert driver_load(lags, {**restarted, task(1): batch(500)}) == OVERLOADED_LOAD


def test_an_idle_task_asks_nothing_and_an_unmeasured_one_the_average() -> None:
    lags = {task(0): on_cadence(), task(1): on_cadence(), task(2): on_cadence()}
    progress = {task(0): batch(400), task(1): batch(800, rows_per_s=0.0)}
    assert driver_load(lags, progress) == 200 + 0 + 100
    assert driver_load(lags, {task(2): batch(0, batch_id=-1)}) == 0


@given(
    st.lists(
        st.tuples(st.floats(0.1, 60), st.floats(0, 600), st.integers(0, 10**6), st.floats(0, 1e4)),
        max_size=60,
    )
)
def test_overloaded_exactly_when_a_task_with_a_batch_is_behind_and_always_on_the_wire(
    shapes: list[tuple[float, float, int, float]],
) -> None:
    lags = {
        task(n): trigger_lag(Cadence(interval, NOW - age), NOW)
        for n, (interval, age, _, _) in enumerate(shapes)
    }
    progress = {task(n): batch(ms, rate) for n, (_, _, ms, rate) in enumerate(shapes)}
    load = driver_load(lags, progress)
    assert 0 <= load <= INT16_MAX
    assert (load >= OVERLOADED_LOAD) == bool(tasks_behind(lags))
    unstarted = {t: replace(p, committed_at=None) for t, p in progress.items()}
    assert driver_load(lags, unstarted) < OVERLOADED_LOAD
