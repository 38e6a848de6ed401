"""Spark's per-trigger progress folded into per-task figures: totals from committed
batches only, whatever idle triggers report in between."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from worker.runtime.task_progress import TaskProgress, fold_progress, needs_window, source_lag


def batch(number: int, rows: int, **more: Any) -> dict[str, Any]:
    """A batch's own report, as Spark sends it once the batch has committed."""
    return {
        "batchId": number,
        "numInputRows": rows,
        "inputRowsPerSecond": rows / 2,
        "processedRowsPerSecond": rows * 2.0,
        "durationMs": {"triggerExecution": 100 + number},
        **more,
    }


def idle(number: int) -> dict[str, Any]:
    """What Spark 4.0 reports for a trigger that found no data: the id of the next batch,
    not yet run, and no rows (seen in a real query's `recentProgress`)."""
    return {
        "batchId": number,
        "numInputRows": 0,
        "inputRowsPerSecond": 0.0,
        "processedRowsPerSecond": 0.0,
        "durationMs": {"latestOffset": 1, "triggerExecution": 1},
    }


def test_totals_count_every_batch_once_and_rates_are_the_newest() -> None:
    first = fold_progress(None, [batch(0, 10)], newest_committed=0)
    assert first is not None and first.input_rows_total == 10
    again = fold_progress(first, [batch(0, 10)], newest_committed=0)
    assert again == first
    later = fold_progress(first, [batch(0, 10), batch(1, 20), batch(2, 30)], newest_committed=2)
    assert later is not None
    assert (later.batch_id, later.input_rows_total) == (2, 60)
    assert (later.input_rows_per_second, later.batch_duration_ms) == (15.0, 102)
    assert fold_progress(None, [], newest_committed=-1) is None


def test_an_idle_report_under_the_next_id_does_not_count_that_batch() -> None:
    """The first look sees batch 0 and then an idle trigger already under id 1; the
    second sees batch 1's own report: its rows count."""
    first = fold_progress(None, [idle(0), batch(0, 100), idle(1)], newest_committed=0)
    assert first is not None
    assert (first.batch_id, first.input_rows_total) == (0, 100)
    assert first.input_rows_per_second == 0.0
    second = fold_progress(first, [idle(0), batch(0, 100), idle(1), batch(1, 70)], 1)
    assert second is not None
    assert (second.batch_id, second.input_rows_total) == (1, 170)
    assert second.input_rows_per_second == 35.0


def test_bursts_separated_by_idle_triggers_count_every_row() -> None:
    window: list[dict[str, Any]] = []
    seen: TaskProgress | None = None
    committed = -1
    for number, rows in enumerate((600, 550, 650)):
        window += [idle(number)] * 3
        seen = fold_progress(seen, window, committed)
        window.append(batch(number, rows))
        committed = number
        seen = fold_progress(seen, window, committed)
    window += [idle(3)] * 3
    seen = fold_progress(seen, window, committed)
    assert seen is not None
    assert (seen.batch_id, seen.input_rows_total) == (2, 1_800)


def test_looking_again_at_the_same_window_counts_nothing_more() -> None:
    window = [batch(0, 5), idle(1), batch(1, 7), idle(2), idle(2)]
    once = fold_progress(None, window, newest_committed=1)
    assert once is not None and once.input_rows_total == 12
    assert fold_progress(once, window, newest_committed=1) == once
    assert fold_progress(once, window[-1:], newest_committed=1) == once


def test_a_batch_not_yet_in_the_commit_log_counts_once_it_is() -> None:
    early = fold_progress(None, [batch(0, 5), batch(1, 7)], newest_committed=0)
    assert early is not None and (early.batch_id, early.input_rows_total) == (0, 5)
    late = fold_progress(early, [batch(0, 5), batch(1, 7)], newest_committed=1)
    assert late is not None and (late.batch_id, late.input_rows_total) == (1, 12)


def test_a_batch_without_rows_is_in_once_a_later_trigger_reports() -> None:
    """A committed batch may read no rows (a no-data batch of a stateful query); its
    report looks like an idle one until the next trigger reports under a later id."""
    window = [batch(0, 5), idle(1), batch(1, 0)]
    before = fold_progress(None, window, newest_committed=1)
    assert before is not None and before.batch_id == 0
    after = fold_progress(before, [*window, idle(2)], newest_committed=1)
    assert after is not None and (after.batch_id, after.input_rows_total) == (1, 5)


def test_a_restarted_task_continues_from_its_checkpoint() -> None:
    """Batches 0-4 committed before the restart; the new query's first trigger is idle
    under id 5, then batch 5 runs. The total is this start's rows."""
    started = fold_progress(None, [idle(5)], newest_committed=4)
    assert started is not None
    assert (started.batch_id, started.input_rows_total) == (4, 0)
    assert not needs_window(started, idle(5))
    ran = fold_progress(started, [batch(5, 40)], newest_committed=5)
    assert ran is not None and (ran.batch_id, ran.input_rows_total) == (5, 40)


def test_the_window_is_read_when_the_newest_report_may_hide_others() -> None:
    counted = fold_progress(None, [batch(3, 1)], newest_committed=3)
    assert needs_window(None, batch(0, 1)) is False
    assert needs_window(None, idle(5)) is True
    assert needs_window(counted, batch(4, 1)) is False
    assert needs_window(counted, idle(5)) is True


@st.composite
def triggers(draw: st.DrawFn) -> list[tuple[int, bool]]:
    """Triggers in order: (rows read, whether the monitor looks right after the commit
    log has the batch but before Spark has reported it). 0 rows: an idle trigger."""
    rows = st.one_of(st.just(0), st.integers(1, 500))
    return draw(st.lists(st.tuples(rows, st.booleans()), max_size=40))


@given(triggers(), st.data())
def test_any_looks_at_bursty_input_count_exactly_the_committed_rows(
    schedule: list[tuple[int, bool]], data: st.DataObject
) -> None:
    """A simulated query and a monitor that looks after any trigger, reading the
    window only when `needs_window` says so, as the runtime does."""
    reports: list[dict[str, Any]] = []
    committed = -1
    seen: TaskProgress | None = None

    def look() -> None:
        nonlocal seen
        if reports:
            window = reports if needs_window(seen, reports[-1]) else reports[-1:]
            seen = fold_progress(seen, window, committed)

    for rows, look_before_report in schedule:
        if rows:
            committed += 1
            if look_before_report:
                look()
            reports.append(batch(committed, rows))
        else:
            reports.append(idle(committed + 1))
        if data.draw(st.booleans()):
            look()
    reports.append(idle(committed + 1))
    look()
    assert seen is not None
    assert seen.input_rows_total == sum(rows for rows, _ in schedule)
    assert seen.batch_id == committed


def test_kafka_lag_is_latest_minus_read_over_partitions() -> None:
    kafka = {
        "endOffset": '{"t": {"0": 10, "1": 5}}',
        "latestOffset": '{"t": {"0": 12, "1": 9}}',
    }
    assert source_lag([kafka]) == 6
    assert source_lag([{"endOffset": "3", "latestOffset": "7"}]) is None
    assert source_lag([{"endOffset": "not json", "latestOffset": None}]) is None


def test_the_commit_time_is_the_newest_counted_batch_s_end() -> None:
    """Its trigger's start (ISO 8601 in UTC, as Spark writes it) plus its duration; an
    idle report does not move it."""
    started = "2026-11-26T18:00:00.000Z"
    first = fold_progress(None, [batch(0, 10, timestamp=started)], newest_committed=0)
    assert first is not None and first.committed_at == 1_795_716_000.1
    later = fold_progress(first, [batch(0, 10, timestamp=started), idle(1)], 0)
    assert later is not None and later.committed_at == first.committed_at
    assert fold_progress(None, [batch(0, 10)], newest_committed=0) is not None
