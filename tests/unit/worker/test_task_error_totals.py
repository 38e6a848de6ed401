"""A task's error totals: the per-batch counts files of committed batches only, each batch
once, however the looks fall and wherever the task starts again."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.records.errors.task_errors import (
    NO_ERRORS,
    BatchErrors,
    batch_errors_path,
    write_batch_errors,
)
from worker.runtime.task_error_totals import (
    PROBE_LIMIT,
    TaskErrorTotals,
    fold_errors,
    read_error_totals,
)

START = TaskErrorTotals()


def bad(records: int, dlq: int = 0, at: int | None = None) -> BatchErrors:
    """A batch whose `records` bad records were skipped, `dlq` of them sent to the DLQ."""
    return BatchErrors(
        record_errors=records,
        record_failures=records,
        records_skipped=records,
        deadletterqueue_produce_requests=dlq,
        last_error_timestamp_ms=at,
    )


def test_only_committed_batches_count_and_each_once() -> None:
    files = {0: bad(1, at=10), 2: bad(2, dlq=2, at=30), 3: bad(4, at=40)}
    through_2 = fold_errors(START, 2, files)
    assert through_2 == TaskErrorTotals(2, bad(1, at=10) + bad(2, dlq=2, at=30))
    assert fold_errors(through_2, 2, files) == through_2, "a second look counts nothing again"
    assert fold_errors(through_2, 1, files) == through_2, "the totals never go back"
    through_3 = fold_errors(through_2, 3, files)
    assert through_3.totals == bad(7, dlq=2, at=40)


def test_batches_without_a_file_had_no_errors() -> None:
    assert fold_errors(START, 5, {}) == TaskErrorTotals(5, NO_ERRORS)
    assert fold_errors(START, -1, {0: bad(1)}) == START


def test_a_batch_run_again_after_a_crash_counts_as_its_last_run_wrote(tmp_path: Path) -> None:
    """Batch 1 wrote its file, then the worker died before the batch committed; the run
    that commits it writes the file again."""
    write_batch_errors(tmp_path, 0, bad(1, at=5))
    write_batch_errors(tmp_path, 1, bad(3, dlq=3, at=9))
    seen = read_error_totals(tmp_path, START, 0)
    assert seen == TaskErrorTotals(0, bad(1, at=5))
    write_batch_errors(tmp_path, 1, bad(2, dlq=2, at=20))
    seen = read_error_totals(tmp_path, seen, 1)
    assert seen == TaskErrorTotals(1, bad(3, dlq=2, at=20))


def test_a_start_counts_everything_the_checkpoint_committed(tmp_path: Path) -> None:
    """A restarted or moved task starts from nothing and finds the same totals, also
    beyond `PROBE_LIMIT` batches (one listing then, not an open per id)."""
    newest = 3 * PROBE_LIMIT
    for batch in (0, 7, PROBE_LIMIT + 1, newest, newest + 1):
        write_batch_errors(tmp_path, batch, bad(1, dlq=1, at=batch))
    running = START
    for committed in range(newest + 1):
        running = read_error_totals(tmp_path, running, committed)
    restarted = read_error_totals(tmp_path, START, newest)
    assert restarted == running == TaskErrorTotals(newest, bad(4, dlq=4, at=newest))


def test_an_unreadable_file_counts_as_none_and_the_count_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_batch_errors(tmp_path, 0, bad(1))
    batch_errors_path(tmp_path, 1).write_text("[]", encoding="utf-8")
    write_batch_errors(tmp_path, 2, bad(2))
    with caplog.at_level(logging.WARNING):
        seen = read_error_totals(tmp_path, START, 2)
    assert seen == TaskErrorTotals(2, bad(3))
    assert [record.getMessage().split(": ")[0] for record in caplog.records] == [
        str(batch_errors_path(tmp_path, 1))
    ]


per_batch = st.dictionaries(
    st.integers(min_value=0, max_value=80),
    st.builds(bad, st.integers(0, 5), st.integers(0, 5), st.none() | st.integers(0, 10**6)),
)


@settings(max_examples=50, deadline=None)
@given(files=per_batch, looks=st.lists(st.integers(min_value=-1, max_value=80), max_size=8))
def test_any_order_of_looks_gives_the_totals_of_the_committed_batches(
    tmp_path_factory: pytest.TempPathFactory, files: dict[int, BatchErrors], looks: list[int]
) -> None:
    """Looks see the commit log grow (or read it before a newer look did): the totals
    equal the sum over the committed batches' files, whichever way the files are read."""
    checkpoint = tmp_path_factory.mktemp("checkpoint")
    for batch, errors in files.items():
        write_batch_errors(checkpoint, batch, errors)
    folded, read = START, START
    for newest in looks:
        folded = fold_errors(folded, newest, files)
        read = read_error_totals(checkpoint, read, newest)
    newest = max([-1, *looks])
    expected = sum((e for b, e in files.items() if b <= newest), NO_ERRORS)
    assert folded == read == TaskErrorTotals(newest, expected)
