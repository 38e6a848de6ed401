"""The most records one micro-batch of a Kafka sink reads, for either Kafka source.

Without a bound a backlog becomes one batch: a sink that collects its batch into the
driver (`kafka-to-jdbc`) is then bounded by nothing but the driver's memory. Spark's JVM
source takes the bound as `maxOffsetsPerTrigger`; the `sparkherd-kafka` Python source
(whose reader API in PySpark 4.0 has no admission control) caps the end it answers
`latestOffset` with, the same way: a backlog is split over the partitions in proportion
to what each has waiting, a share below one record rounded up so that every partition
with records moves (a batch may pass the bound by fewer records than it has partitions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from aiokafka import TopicPartition


@dataclass(frozen=True)
class BatchBound:
    """`max_offsets` per batch; `resume`, the JSON end offsets of the newest batch the
    task's checkpoint planned (None before its first): where the Python source's next
    batch begins, which its reader cannot learn from Spark on a restart."""

    max_offsets: int
    resume: str | None = None


def capped_ends(
    starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int], limit: int
) -> dict[TopicPartition, int]:
    """The ends of the next batch from `starts`, at most about `limit` offsets past them;
    every partition of `ends` must have a start."""
    waiting = {tp: end - starts[tp] for tp, end in ends.items() if end > starts[tp]}
    total = sum(waiting.values())
    if total <= limit:
        return dict(ends)
    capped = dict(ends)
    for tp, size in waiting.items():
        share = limit * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        capped[tp] = min(starts[tp] + step, ends[tp])
    return capped
