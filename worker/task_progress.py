"""A task's progress as Spark reports it, folded into what an operator watches.

Spark reports one `StreamingQueryProgress` per micro-batch; the runtime looks once a
second, so it may see only the newest of several short batches. Totals therefore count
every batch between two looks (the caller passes the batches it missed), and rates and
durations are the newest batch's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskProgress:
    batch_id: int
    """The newest batch Spark finished (and the sink committed)."""
    input_rows_total: int
    """Rows read by the batches seen since the task started on this worker."""
    input_rows_per_second: float
    processed_rows_per_second: float
    batch_duration_ms: int
    source_lag: int | None
    """How far the source's newest data is ahead of what the batch read, where the source
    says (Kafka: the end offsets minus the offsets read, over all partitions)."""


def batch_id(progress: Mapping[str, Any]) -> int:
    return int(progress.get("batchId", -1))


def fold_progress(
    previous: TaskProgress | None, batches: Sequence[Mapping[str, Any]]
) -> TaskProgress | None:
    """`previous` advanced by the `batches` reported since (oldest first; the ones
    already counted are skipped); None while Spark has reported nothing."""
    seen = previous.batch_id if previous is not None else -1
    total = previous.input_rows_total if previous is not None else 0
    newest: Mapping[str, Any] | None = None
    for progress in batches:
        if batch_id(progress) > seen:
            total += int(progress.get("numInputRows") or 0)
            seen = batch_id(progress)
            newest = progress
    if newest is None:
        return previous
    durations = newest.get("durationMs") or {}
    return TaskProgress(
        batch_id=seen,
        input_rows_total=total,
        input_rows_per_second=_number(newest.get("inputRowsPerSecond")),
        processed_rows_per_second=_number(newest.get("processedRowsPerSecond")),
        batch_duration_ms=int(durations.get("triggerExecution") or 0),
        source_lag=source_lag(newest.get("sources") or ()),
    )


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
