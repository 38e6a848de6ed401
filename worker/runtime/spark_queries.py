"""Blocking looks at, and stops of, one task's Spark streaming query: every function here
makes py4j calls or reads a checkpoint, so the runtime (`worker.runtime.spark_task_runtime`)
calls them on a thread, never on its event loop.
"""

from __future__ import annotations

import asyncio
import json
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from py4j.protocol import Py4JError

from protocol.messages import ConnectorTaskId
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.task_claims import Claim
from worker.plugins.task_state import FENCED_MARK
from worker.runtime.checkpoint_offsets import newest_committed_batch
from worker.runtime.failure_traces import root_cause_line, with_root_cause_first
from worker.runtime.task_error_totals import TaskErrorTotals, read_error_totals
from worker.runtime.task_progress import TaskProgress, batch_id, fold_progress, needs_window
from worker.runtime.trigger_lag import Cadence, trigger_lag

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

STOPPED_BY_ITSELF: Final = "The task's Spark query stopped although the worker did not stop it"


def job_tag(task_id: ConnectorTaskId) -> str:
    """What a task's Spark jobs are tagged with, to find (or cancel) them by task. Spark
    refuses a tag with a comma (its separator of tags), which a connector name may hold."""
    return f"sparkherd-task-{task_id.connector}-{task_id.task}".replace(",", "%2C")


def stop_between_batches(query: StreamingQuery, wait_s: float, poll_s: float = 0.05) -> None:
    """Blocking: stop the query once the batch in flight (if any) has committed, or after
    `wait_s` anyway.

    A batch cut short after its sink committed but before Spark logged the commit runs
    again on the next start; the sinks skip it, so nothing is duplicated, but until then
    the checkpoint's committed offsets (what GET /offsets shows) lag what the sink holds.
    Waiting for a moment with no batch in flight instead is not enough: a query that is
    behind starts its next batch the moment one ends, so polls rarely see that moment (a
    hand-over waited 2.6 s and cut a batch all the same). The batch that begins as the
    awaited one ends is cut: only planned, it runs again on the next start with the same
    offsets and timestamp.
    """
    deadline = time.monotonic() + wait_s
    if query.isActive and query.status["isTriggerActive"]:
        in_flight = _last_batch_id(query) + 1
        while (
            query.isActive
            and query.status["isTriggerActive"]
            and _last_batch_id(query) < in_flight
            and time.monotonic() < deadline
        ):
            time.sleep(poll_s)
    query.stop()


def _last_batch_id(query: StreamingQuery) -> int:
    """The id of the query's last completed batch (-1: none yet)."""
    progress = last_progress(query)
    return -1 if progress is None else batch_id(progress)


def last_progress(query: StreamingQuery) -> dict[str, Any] | None:
    """The query's newest batch progress, as Spark's own JSON of it.

    One py4j call and a parse: PySpark's `lastProgress` builds its object with dozens of
    calls, walking Java collections whose every end is a Java exception that PySpark
    converts with more calls, and under load a monitor's look hung 30-45 s in such a
    conversion."""
    progress = query._jsq.lastProgress()
    return None if progress is None else _parsed(progress.json())


def recent_progress(query: StreamingQuery) -> list[dict[str, Any]]:
    """The progress of the query's recent batches, oldest first, as `last_progress`."""
    progresses = query._jsq.recentProgress()
    return [_parsed(progresses[i].json()) for i in range(len(progresses))]


def _parsed(text: str) -> dict[str, Any]:
    parsed = json.loads(text)
    if not isinstance(parsed, dict):
        raise ValueError(f"a query progress that is no JSON object: {text[:100]}")
    return parsed


def describe_failure(error: BaseException) -> str:
    """The trace of a failure, led by its root cause (`worker.runtime.failure_traces`); a Spark
    error's message carries the JVM stack trace too."""
    trace = "".join(traceback.format_exception(error)).rstrip()
    return with_root_cause_first(root_cause_line(error), trace)


class TaskFencedError(RuntimeError):
    """Another worker claimed the task after this worker did."""

    def __init__(self, task_id: ConnectorTaskId, holder: str) -> None:
        super().__init__(f"Task {task_id}{FENCED_MARK}{holder}")


@dataclass(frozen=True)
class Launched:
    query: StreamingQuery
    claim: Claim
    interval_s: float | None = None
    """The query's trigger interval (None: not a processing-time trigger)."""
    started_at: float = 0.0
    """Epoch seconds: when the query started."""


def trigger_interval_s(query: StreamingQuery) -> float | None:
    """Blocking: the query's processing-time trigger interval, asked of its execution
    (PySpark keeps no trace of it); None for any other trigger."""
    try:
        interval = query._jsq.streamingQuery().trigger().intervalMs()
    except Py4JError:
        return None
    return int(interval) / 1000 if int(interval) > 0 else None


def waiting_for_data(query: StreamingQuery) -> bool:
    """Blocking: whether the query's newest trigger found nothing to read (a trigger
    that runs keeps the flag of the one before until it knows)."""
    return not _parsed(query._jsq.status().json()).get("isDataAvailable")


def fenced_launches(
    launches: Mapping[ConnectorTaskId, asyncio.Future[Launched]],
) -> set[ConnectorTaskId]:
    """Blocking: of the finished launches, those fenced at start or since."""
    lost = set()
    for task_id, launch in launches.items():
        if launch.cancelled():
            continue
        error = launch.exception()
        if isinstance(error, TaskFencedError) or (
            error is None and launch.result().claim.fenced_by() is not None
        ):
            lost.add(task_id)
    return lost


def stop_and_release(launched: Launched, wait_s: float) -> None:
    """Blocking: stop the query (`stop_between_batches`), then release its claim, so the
    task's next owner may start it at once."""
    stop_between_batches(launched.query, wait_s)
    launched.claim.release()


def ended_queries(
    launches: Mapping[ConnectorTaskId, Launched], watched: Callable[[ConnectorTaskId], bool]
) -> dict[ConnectorTaskId, tuple[str, bool]]:
    """Blocking: the queries that are no longer active or no longer ours, with why and
    whether they were fenced; of the tasks still `watched` only (a stopping query is left
    alone: a look at one answered only after 30-45 s).

    A fenced query is stopped here, before anything else of this round can run it.
    """
    ended: dict[ConnectorTaskId, tuple[str, bool]] = {}
    for task_id, launched in launches.items():
        if not watched(task_id):
            continue
        holder = launched.claim.fenced_by()
        if holder is not None:
            launched.query.stop()
            ended[task_id] = (str(TaskFencedError(task_id, holder)), True)
        elif not launched.query.isActive:
            error = launched.query.exception()
            trace = describe_failure(error) if error is not None else STOPPED_BY_ITSELF
            ended[task_id] = (trace, False)
    return ended


def query_progress(
    launches: Mapping[ConnectorTaskId, Launched],
    seen: Mapping[ConnectorTaskId, TaskProgress],
    watched: Callable[[ConnectorTaskId], bool],
    checkpoint_root: Path,
) -> dict[ConnectorTaskId, TaskProgress]:
    """Blocking: each query's progress folded in since the last look, of the tasks still
    `watched`. Spark keeps the recent batches too, read only when the newest shows that
    some may be uncounted. The commit log is read after the reports, so it holds every
    batch whose report they hold (Spark reports a batch once it has committed it)."""
    found: dict[ConnectorTaskId, TaskProgress] = {}
    for task_id, launched in launches.items():
        if not watched(task_id):
            continue
        before = seen.get(task_id)
        newest = last_progress(launched.query)
        if newest is None:
            continue
        window = recent_progress(launched.query) if needs_window(before, newest) else [newest]
        checkpoint = checkpoint_dir_for(checkpoint_root, task_id.connector, task_id.task)
        progress = fold_progress(before, window, newest_committed_batch(checkpoint))
        if progress is not None:
            found[task_id] = progress
    return found


def trigger_cadences(
    launches: Mapping[ConnectorTaskId, Launched],
    progress: Mapping[ConnectorTaskId, TaskProgress],
    watched: Callable[[ConnectorTaskId], bool],
    now: float,
) -> dict[ConnectorTaskId, Cadence]:
    """Blocking: each query's cadence (`worker.runtime.trigger_lag`), of the tasks still
    `watched` with a processing-time trigger. Whether a task waits for data is asked of
    Spark only for a task that would otherwise lag (one look per lagging task) and has
    reported a trigger: before its first, Spark's flag says no data whatever the source
    holds, and a task starved of its first batch would pass for idle."""
    found: dict[ConnectorTaskId, Cadence] = {}
    for task_id, launched in launches.items():
        if not watched(task_id) or launched.interval_s is None:
            continue
        seen = progress.get(task_id)
        committed_at = seen.committed_at if seen is not None else None
        cadence = Cadence(launched.interval_s, committed_at or launched.started_at)
        lagging = seen is not None and trigger_lag(cadence, now).lag_s > 0
        if lagging and waiting_for_data(launched.query):
            cadence = replace(cadence, waiting_for_data=True)
        found[task_id] = cadence
    return found


def error_totals(
    tasks: list[ConnectorTaskId],
    seen: Mapping[ConnectorTaskId, TaskErrorTotals],
    watched: Callable[[ConnectorTaskId], bool],
    checkpoint_root: Path,
) -> dict[ConnectorTaskId, TaskErrorTotals]:
    """Blocking: each task's error totals advanced to its checkpoint's newest committed
    batch (`worker.runtime.task_error_totals`), of the tasks still `watched`; a task not seen
    yet starts from everything its checkpoint committed."""
    found: dict[ConnectorTaskId, TaskErrorTotals] = {}
    for task_id in tasks:
        if not watched(task_id):
            continue
        checkpoint = checkpoint_dir_for(checkpoint_root, task_id.connector, task_id.task)
        before = seen.get(task_id, TaskErrorTotals())
        found[task_id] = read_error_totals(checkpoint, before, newest_committed_batch(checkpoint))
    return found
