"""The per-batch error counts file: the contract between the error layer and the metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.records.errors.task_errors import (
    NO_ERRORS,
    BatchErrors,
    batch_errors_path,
    batches_with_errors,
    read_batch_errors,
    write_batch_errors,
)

counts = st.integers(min_value=0, max_value=2**40)
batch_errors = st.builds(
    BatchErrors,
    record_errors=counts,
    record_failures=counts,
    records_skipped=counts,
    errors_logged=counts,
    deadletterqueue_produce_requests=counts,
    deadletterqueue_produce_failures=counts,
    last_error_timestamp_ms=st.none() | counts,
)


@given(batch_errors)
def test_json_round_trip(errors: BatchErrors) -> None:
    assert BatchErrors.from_json(errors.to_json()) == errors


def test_path_rule(tmp_path: Path) -> None:
    assert batch_errors_path(tmp_path, 7) == tmp_path / "errors" / "7.json"


def test_write_then_read(tmp_path: Path) -> None:
    errors = BatchErrors(record_errors=3, records_skipped=3, last_error_timestamp_ms=5)
    write_batch_errors(tmp_path, 4, errors)
    write_batch_errors(tmp_path, 12, NO_ERRORS)
    assert read_batch_errors(tmp_path, 4) == errors
    assert batches_with_errors(tmp_path) == [4, 12]
    assert not list((tmp_path / "errors").glob(".*"))


def test_missing_file_reads_as_zeros(tmp_path: Path) -> None:
    assert read_batch_errors(tmp_path, 0) == NO_ERRORS
    assert batches_with_errors(tmp_path) == []


def test_unknown_keys_ignored_missing_keys_zero() -> None:
    assert BatchErrors.from_json('{"record_errors": 2, "future": 1}') == BatchErrors(
        record_errors=2
    )


@pytest.mark.parametrize(
    "text",
    ["[]", '{"record_errors": -1}', '{"record_errors": true}', '{"last_error_timestamp_ms": "x"}'],
)
def test_malformed_files_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        BatchErrors.from_json(text)


def test_sum_keeps_the_later_error_time() -> None:
    first = BatchErrors(record_errors=1, last_error_timestamp_ms=10)
    second = BatchErrors(record_errors=2, deadletterqueue_produce_requests=2)
    total = first + second + BatchErrors(last_error_timestamp_ms=0)
    assert total == BatchErrors(
        record_errors=3, deadletterqueue_produce_requests=2, last_error_timestamp_ms=10
    )
