"""Spark's per-batch progress folded into per-task figures."""

from __future__ import annotations

from typing import Any

from worker.task_progress import fold_progress, source_lag


def batch(number: int, rows: int, **more: Any) -> dict[str, Any]:
    return {
        "batchId": number,
        "numInputRows": rows,
        "inputRowsPerSecond": rows / 2,
        "processedRowsPerSecond": rows * 2.0,
        "durationMs": {"triggerExecution": 100 + number},
        **more,
    }


def test_totals_count_every_batch_once_and_rates_are_the_newest() -> None:
    first = fold_progress(None, [batch(0, 10)])
    assert first is not None and first.input_rows_total == 10
    again = fold_progress(first, [batch(0, 10)])
    assert again == first
    later = fold_progress(first, [batch(0, 10), batch(1, 20), batch(2, 30)])
    assert later is not None
    assert (later.batch_id, later.input_rows_total) == (2, 60)
    assert (later.input_rows_per_second, later.batch_duration_ms) == (15.0, 102)
    assert fold_progress(None, []) is None


def test_kafka_lag_is_latest_minus_read_over_partitions() -> None:
    kafka = {
        "endOffset": '{"t": {"0": 10, "1": 5}}',
        "latestOffset": '{"t": {"0": 12, "1": 9}}',
    }
    assert source_lag([kafka]) == 6
    assert source_lag([{"endOffset": "3", "latestOffset": "7"}]) is None
    assert source_lag([{"endOffset": "not json", "latestOffset": None}]) is None
