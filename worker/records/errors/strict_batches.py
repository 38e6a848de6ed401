"""`errors.tolerance=none` (Connect's default) per batch: the first record that fails
conversion or `transform.sql` fails the task, and the failure names the record.

The query runs over the batch as it would inside the streaming plan (the converters'
check, `failing_on_errors`, names a record that cannot be converted; the query then runs
straight into the commit, with no extra pass). Only when it fails with a record's error
(`tolerant_batches.is_record_error`), which Spark reports without saying which record,
is the batch cached and bisected until one failing record is found (`limit=1`): the
failure path pays for the name, a batch that runs pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pyspark.errors import PySparkException

from worker.records.converters.records import ERROR_COLUMN, KAFKA_COLUMNS, failing_on_errors
from worker.records.errors.failed_records import PutFailure
from worker.records.errors.tolerant_batches import (
    batch_query,
    first_line,
    is_record_error,
    locate_failures,
    use_query_settings,
)
from worker.records.errors.transform_failures import (
    failing_on_transform_errors,
    transform_failed,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class RecordFailedError(RuntimeError):
    """`transform.sql` or the sink failed on one record; the message says which and why."""


class StrictBatches:
    """The `foreachBatch` step of a task with `errors.tolerance=none`."""

    def __init__(self, sql: str, view: str, task: str) -> None:
        self._sql = sql
        self._view = view
        self._task = task

    def __call__(
        self, batch: DataFrame, batch_id: int, commit: Callable[[DataFrame], None]
    ) -> None:
        use_query_settings(batch)
        try:
            rows = failing_on_errors(failing_on_transform_errors(batch))
            commit(batch_query(self._sql, self._view, rows))
        except PySparkException as exc:
            if not is_record_error(exc):
                raise
            self._name_the_record(batch, exc)
            raise

    def put_failed(self, batch_id: int, sink: str, failures: Sequence[PutFailure]) -> None:
        """The sink could not write these records: the task fails naming the first."""
        if failures:
            first = failures[0]
            more = f" ({len(failures) - 1} more in batch {batch_id})" if len(failures) > 1 else ""
            raise RecordFailedError(
                f"{sink} could not write the record at {first.where()} "
                f"(errors.tolerance=none){more}: {first.message}"
            )

    def _name_the_record(self, batch: DataFrame, error: PySparkException) -> None:
        """Raise `RecordFailedError` for a record `transform.sql` fails on; return when
        the failure is a conversion's or a transform's (its message names the record
        already)."""
        batch.persist()
        try:
            failed = batch[ERROR_COLUMN].isNotNull() | transform_failed(batch)
            if not batch.where(failed).isEmpty():
                return
            good = batch.select(*KAFKA_COLUMNS)
            (where, cause), *_ = locate_failures(
                good, self._sql, self._view, error, self._task, limit=1
            )
        finally:
            batch.unpersist()
        raise RecordFailedError(
            f"transform.sql failed on the record at topic {where.topic}, partition "
            f"{where.partition}, offset {where.start} (errors.tolerance=none): "
            f"{first_line(cause)}"
        ) from error
