"""A task's error totals, Connect's `task-error-metrics`, folded from the per-batch
counts files (`worker.records.errors.task_errors`) of the batches its checkpoint has committed.

A batch writes its file before it commits; one cut short by a crash runs again under the
same id and writes its file again. So a batch counts once its id is in the commit log
(`commits/`, as `worker.runtime.task_progress` counts rows) and never again: whatever an
uncommitted run wrote is replaced before the id commits. Spark runs batches in order and
keeps only the newest commit-log entries, so "committed" is "at most the newest id in
the commit log". The files live in the checkpoint, which every worker shares, so the
totals of a task restarted or moved to another worker start from everything its
checkpoint has committed, not from zero as Connect's in-memory ones do.

Reading is incremental: the totals remember the newest batch they counted, and a look
reads only the files of batches committed since.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from worker.records.errors.task_errors import (
    NO_ERRORS,
    BatchErrors,
    batch_errors_path,
    batches_with_errors,
    read_batch_errors,
)

PROBE_LIMIT: Final = 32
"""Up to this many newly committed batches, a look opens each one's file by its name (a
running task commits one or a few between looks); beyond it, as on a task's first look
at a long-lived checkpoint, one listing of `errors/` finds the few batches that have a
file instead of trying every id since the first."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskErrorTotals:
    counted_through: int = -1
    """The newest batch counted (-1: none yet)."""
    totals: BatchErrors = NO_ERRORS
    """The sums over the batches up to `counted_through`, the newest error time kept."""


def fold_errors(
    previous: TaskErrorTotals, newest_committed: int, batches: Mapping[int, BatchErrors]
) -> TaskErrorTotals:
    """`previous` advanced through `newest_committed`: the batches of `batches` after
    the ones counted and at most `newest_committed` are added, the others (counted
    already, or not committed yet) left out; a batch missing from `batches` had no
    errors. A commit log behind what was counted changes nothing: the totals never go
    back while the task runs (its checkpoint is reset only while it is stopped)."""
    if newest_committed <= previous.counted_through:
        return previous
    new = [
        errors
        for batch, errors in sorted(batches.items())
        if previous.counted_through < batch <= newest_committed
    ]
    return TaskErrorTotals(newest_committed, sum(new, previous.totals))


def read_error_totals(
    checkpoint_dir: Path, previous: TaskErrorTotals, newest_committed: int
) -> TaskErrorTotals:
    """Blocking: `fold_errors` over the files of the batches committed since `previous`,
    `newest_committed` being the commit log's newest id, read before this call (a file
    is written before its batch commits, so the file of a committed batch is final)."""
    first = previous.counted_through + 1
    if newest_committed < first:
        return previous
    batches: Sequence[int]
    if newest_committed - first < PROBE_LIMIT:
        batches = range(first, newest_committed + 1)
    else:
        listed = batches_with_errors(checkpoint_dir)
        batches = [batch for batch in listed if first <= batch <= newest_committed]
    return fold_errors(
        previous, newest_committed, {batch: _read(checkpoint_dir, batch) for batch in batches}
    )


def _read(checkpoint_dir: Path, batch: int) -> BatchErrors:
    """A file that does not parse (written by a version that counts differently, or
    damaged) counts as no errors, said once: it is past once counted, and stalling on it
    would stop every later batch from counting."""
    try:
        return read_batch_errors(checkpoint_dir, batch)
    except ValueError as exc:
        log.warning(
            "%s: error counts that cannot be read, counted as none: %s",
            batch_errors_path(checkpoint_dir, batch),
            exc,
        )
        return NO_ERRORS
