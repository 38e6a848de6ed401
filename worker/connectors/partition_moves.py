"""When a Kafka sink task's partitions moved (`tasks.max` changed), and where each of its
partitions starts: the decisions of `worker.connectors.partition_takeover`, pure.

A partition's position lives in the checkpoint of the task that read it. A task resumes
its own checkpoint as it is only if that checkpoint reads no partition the task no
longer has (Spark's Kafka source fails on a partition that left its subscription) and no
other checkpoint, nor the connector's hand-over file, holds one of the task's partitions.
Otherwise it takes them over: every checkpoint holding one of its partitions, its own
included, gives all its positions to the hand-over file and is retired, and the task
starts a fresh checkpoint at the positions of its own partitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from worker.kafka.source import EARLIEST, LATEST

Part = tuple[str, int]
"""A topic and one of its partitions."""
Positions = dict[Part, int]
"""The next offset to read of each partition."""
Offsets = dict[str, dict[str, int]]
"""Positions in the JSON shape of Spark's Kafka source offsets (and of its
`startingOffsets`): `{"<topic>": {"<partition>": <offset>}}`."""


class PositionConflictError(RuntimeError):
    """Two places hold different positions for one partition: which one is right cannot
    be told, so the task does not start rather than guess."""


def positions_of(offsets: Mapping[str, Mapping[str, int]] | None) -> Positions:
    return {
        (topic, int(partition)): int(offset)
        for topic, by_partition in (offsets or {}).items()
        for partition, offset in by_partition.items()
    }


def as_offsets(positions: Mapping[Part, int]) -> Offsets:
    offsets: Offsets = {}
    for (topic, partition), offset in sorted(positions.items()):
        offsets.setdefault(topic, {})[str(partition)] = offset
    return offsets


def must_take_over(
    assigned: set[Part], own: set[Part], others: Mapping[int, set[Part]], handed: set[Part]
) -> bool:
    """Whether the task cannot simply resume its own checkpoint (`own`: the partitions it
    reads; `others`: those every other task's checkpoint reads; `handed`: those in the
    hand-over file). A partition that is only new (added to a topic) needs no take-over:
    the source starts it as it starts any new partition."""
    return (
        not own <= assigned
        or bool(assigned & handed)
        or any(assigned & held for held in others.values())
    )


def holding(assigned: set[Part], others: Mapping[int, set[Part]]) -> list[int]:
    """The other tasks whose checkpoints hold one of `assigned`, to be retired."""
    return sorted(task for task, held in others.items() if assigned & held)


def merge_positions(found: Iterable[tuple[str, Mapping[Part, int]]]) -> Positions:
    """Every position found, by where it was found (a checkpoint, the hand-over file). The
    same partition may be found twice with one position (a take-over cut short between
    writing the hand-over file and retiring a checkpoint), never with two."""
    merged: Positions = {}
    where: dict[Part, str] = {}
    for place, positions in found:
        for part, offset in positions.items():
            if part in merged and merged[part] != offset:
                topic, partition = part
                raise PositionConflictError(
                    f"Partition {topic}:{partition} is at offset {merged[part]} in "
                    f"{where[part]} and at {offset} in {place}; the task does not start "
                    "rather than guess which is right. Reset the connector's offsets (or "
                    "alter them) to say where it should resume"
                )
            merged[part] = offset
            where[part] = place
    return merged


def split_handover(merged: Mapping[Part, int], assigned: set[Part]) -> tuple[Positions, Positions]:
    """(the task's own positions, those left in the hand-over file for other tasks)."""
    taken = {part: offset for part, offset in merged.items() if part in assigned}
    left = {part: offset for part, offset in merged.items() if part not in assigned}
    return taken, left


def start_offsets(
    assigned: Iterable[Part],
    positions: Mapping[Part, int],
    starting: Literal["earliest", "latest"],
) -> Offsets:
    """`startingOffsets` for a fresh checkpoint: each partition at its handed-over
    position, one that no task has read at `starting` (Spark's source needs every
    assigned partition named)."""
    unread = EARLIEST if starting == "earliest" else LATEST
    return as_offsets({part: positions.get(part, unread) for part in assigned})
