"""A task's progress as Spark reports it, folded into what an operator watches.

Spark reports one `StreamingQueryProgress` per trigger; the runtime looks once a second,
so it may see only the newest of several short batches, and passes the recent window
when it may have missed some. A trigger that finds no new data reports an idle progress
under the id of the *next* batch, not yet run, with no rows (Spark 4.0, seen again every
`spark.sql.streaming.noDataProgressEventInterval`), so an id alone does not say that
batch is done: counting it on an idle report and skipping the real report that follows
left the total at a third of the rows in a bursty task's output. Totals therefore count
a batch once its own report is certain and the checkpoint's commit log has it; rates and
lag are the newest trigger's, idle or not, so an idle task reads 0 rows/s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class TaskProgress:
    batch_id: int
    """The newest batch counted: in the checkpoint's commit log and its report seen (-1:
    none yet; a restarted task starts from its checkpoint's newest)."""
    input_rows_total: int
    """Rows read by the committed batches of this start of the task on this worker."""
    input_rows_per_second: float
    processed_rows_per_second: float
    batch_duration_ms: int
    """The newest counted batch's duration."""
    source_lag: int | None
    """How far the source's newest data is ahead of what the batch read, where the source
    says (Kafka: the end offsets minus the offsets read, over all partitions)."""
    committed_at: float | None = None
    """Epoch seconds: when the newest counted batch ended (its trigger's start plus its
    duration, as Spark reports them); None while none is counted."""


def batch_id(progress: Mapping[str, Any]) -> int:
    return int(progress.get("batchId", -1))


def needs_window(previous: TaskProgress | None, newest: Mapping[str, Any]) -> bool:
    """Whether the newest report alone may leave a batch uncounted: it can settle only
    its own id, so any other id between the counted ones and it needs the recent window
    (reading all of it costs one py4j call per report)."""
    counted = previous.batch_id if previous is not None else -1
    return batch_id(newest) > counted + 1


def fold_progress(
    previous: TaskProgress | None, window: Sequence[Mapping[str, Any]], newest_committed: int
) -> TaskProgress | None:
    """`previous` advanced by a window of reports (oldest first; looking at the same
    window again changes nothing), counting only batches up to `newest_committed`, the
    commit log's newest id read after the window; None while Spark has reported nothing.

    A report under id k means Spark is past batch k - 1, whose own report came before
    it; a report with rows is batch k's own (an idle one reads nothing). Of several
    reports under one id the last is the batch's own, the idle ones came first.
    """
    if not window:
        return previous
    counted = previous.batch_id if previous is not None else -1
    settled = min(newest_committed, max(_settles(progress) for progress in window))
    own = {batch_id(progress): progress for progress in window}
    batches = [own[number] for number in sorted(own) if counted < number <= settled]
    total = previous.input_rows_total if previous is not None else 0
    if batches:
        duration = int((batches[-1].get("durationMs") or {}).get("triggerExecution") or 0)
        committed_at = _ended_at(batches[-1], duration)
    else:
        duration = previous.batch_duration_ms if previous is not None else 0
        committed_at = previous.committed_at if previous is not None else None
    newest = window[-1]
    return TaskProgress(
        batch_id=max(counted, settled),
        input_rows_total=total + sum(_rows(batch) for batch in batches),
        input_rows_per_second=_number(newest.get("inputRowsPerSecond")),
        processed_rows_per_second=_number(newest.get("processedRowsPerSecond")),
        batch_duration_ms=duration,
        source_lag=source_lag(newest.get("sources") or ()),
        committed_at=committed_at,
    )


def _ended_at(progress: Mapping[str, Any], duration_ms: int) -> float | None:
    """The batch's trigger start (ISO 8601 in UTC, as Spark writes it) plus its duration,
    in epoch seconds; None for a report without a readable start."""
    try:
        started = datetime.fromisoformat(str(progress["timestamp"]))
    except (KeyError, ValueError):
        return None
    return started.timestamp() + duration_ms / 1000


def _settles(progress: Mapping[str, Any]) -> int:
    """The newest batch whose own report this one shows to be in."""
    return batch_id(progress) if _rows(progress) > 0 else batch_id(progress) - 1


def _rows(progress: Mapping[str, Any]) -> int:
    return int(progress.get("numInputRows") or 0)


def source_lag(sources: Sequence[Mapping[str, Any]]) -> int | None:
    """Sum over sources and partitions of newest offset minus offset read, for sources
    whose offsets are `{topic: {partition: offset}}` (Kafka's); None if none are."""
    lag: int | None = None
    for source in sources:
        latest, read = _offsets(source.get("latestOffset")), _offsets(source.get("endOffset"))
        if latest is None or read is None:
            continue
        lag = (lag or 0) + sum(
            max(0, offset - read.get(key, offset)) for key, offset in latest.items()
        )
    return lag


def _offsets(raw: object) -> dict[tuple[str, str], int] | None:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    offsets: dict[tuple[str, str], int] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            return None
        for partition, offset in partitions.items():
            if not isinstance(offset, int):
                return None
            offsets[(str(topic), str(partition))] = offset
    return offsets


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
