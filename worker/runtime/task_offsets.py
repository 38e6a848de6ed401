"""A task's committed offsets as values: what the herder and REST speak of when they show,
alter or reset a connector's progress (Kafka Connect's offsets API, KIP-875), and the
offsets a new connector starts from (KIP-995's `initial_offsets`).

Kept apart from the checkpoint I/O (`worker.runtime.checkpoint_offsets`) so that the
herder and REST can check and carry offsets without touching a checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeGuard

from worker.plugins.topic_patterns import compiled_pattern, pattern_problem

MAX_POSITION = 2**63 - 1
"""Java's `Long.MAX_VALUE`: Spark reads every position of our sources' offsets (Kafka
offsets, the generator's rows and timestamp, the file source's log offset) as a long."""
MAX_PARTITION: Final = 2**31 - 1
"""Java's `Integer.MAX_VALUE`: a Kafka partition number is an int."""
KAFKA_TOPIC: Final = "kafka_topic"
KAFKA_PARTITION: Final = "kafka_partition"
KAFKA_OFFSET: Final = "kafka_offset"
"""The keys of a sink's offsets in Connect's REST API (KIP-875): a partition is
`{"kafka_topic", "kafka_partition"}`, its offset `{"kafka_offset"}`, the next to read."""


class OffsetsError(ValueError):
    """Offsets that cannot be applied to this checkpoint; the message says why."""


@dataclass(frozen=True)
class SourceOffset:
    """The committed end offset of one source of one task's query."""

    task: int
    source: int
    offset: Any


def check_offset(offset: object, where: str = "offset") -> None:
    """Raises `OffsetsError` unless `offset` has the shape of every source's offset here: a
    JSON object whose values are objects of the same kind or positions, integers from 0
    to `MAX_POSITION`. `where` names the offset in the message.

    Spark reads an altered offset only when the task restarts, so a position it cannot
    read (NaN, a fraction, a boolean, a string, a number beyond a long) would fail the
    task at every start, or resume it somewhere no batch ever ended.
    """
    if not isinstance(offset, dict):
        raise OffsetsError(
            f"{where} must be a JSON object, the source's own offset (got {_shown(offset)})"
        )
    for key, value in offset.items():
        if isinstance(value, dict):
            check_offset(value, f"{where}.{key}")
        elif not _is_position(value):
            raise OffsetsError(
                f"{where}.{key} must be an integer from 0 to {MAX_POSITION} (got {_shown(value)})"
            )


def _is_position(value: object) -> bool:
    """`True` is an int to Python, but no position to Spark."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_POSITION


def _shown(value: object) -> str:
    """`value` as JSON (`NaN`, `true`, `"12"`), cut short: it may be most of a body."""
    text = json.dumps(value)
    return text if len(text) <= 40 else f"{text[:40]}..."


def task_partition(partition: object, where: str) -> tuple[int, int]:
    """The `(task, source)` a partition of a Spark task's offsets names, as
    `{"task": n, "source": i}` (`source` 0 when left out); raises `OffsetsError`."""
    if isinstance(partition, dict) and not set(partition) - {"task", "source"}:
        task, source = partition.get("task"), partition.get("source", 0)
        if _is_index(task) and _is_index(source):
            return task, source
    raise OffsetsError(
        f'{where} must be {{"task": n, "source": i}} with non-negative integers '
        f"(got {_shown(partition)})"
    )


def _is_index(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True)
class InitialOffsets:
    """Where a new connector's tasks start (KIP-995), checked: a sink's by Kafka
    partition, a source's by task, as its own offset."""

    positions: Mapping[tuple[str, int], int] = field(default_factory=dict)
    """A sink's: the next offset to read of each topic partition."""
    marks: Mapping[int, Any] = field(default_factory=dict)
    """A source's: the offset each task resumes after (its query's only source)."""

    def handover(self) -> dict[str, dict[str, int]]:
        """`positions` in the JSON shape of Spark's Kafka source offsets."""
        shaped: dict[str, dict[str, int]] = {}
        for (topic, partition), offset in sorted(self.positions.items()):
            shaped.setdefault(topic, {})[str(partition)] = offset
        return shaped


OffsetEntry = tuple[object, object]
"""One `{"partition", "offset"}` of a request, as given."""


def initial_offsets(
    entries: Sequence[OffsetEntry], connector_type: str, config: Mapping[str, str]
) -> InitialOffsets:
    """KIP-995's `initial_offsets` for a connector of `connector_type` and `config`, or
    `OffsetsError` naming the first entry that is wrong.

    A sink's partitions are Connect's (`kafka_topic`, `kafka_partition`), of topics
    the sink reads (its `topics`, or those its `topics.regex` matches), each at most
    once; a null offset leaves the partition where the sink would start it anyway. A
    source's are `{"task": n, "source": 0}` of a task it may have (below `tasks.max`),
    its offset the source's own, as `PATCH .../offsets` takes it: a new connector's
    checkpoint gets the offsets of the one source every task here reads.
    """
    if not entries:
        raise OffsetsError("initial_offsets cannot be empty: leave it out, or give offsets")
    if connector_type == "sink":
        return InitialOffsets(positions=_sink_positions(entries, config))
    if connector_type == "source":
        return InitialOffsets(marks=_source_marks(entries, config))
    raise OffsetsError(f"a connector of type {connector_type!r} takes no initial offsets")


def _sink_positions(
    entries: Sequence[OffsetEntry], config: Mapping[str, str]
) -> dict[tuple[str, int], int]:
    reads = _sink_topics(config)
    positions: dict[tuple[str, int], int] = {}
    for where, topic, number, offset in _kafka_entries(entries, "initial_offsets"):
        if not reads(topic):
            raise OffsetsError(
                f"{where}.partition: the connector does not read topic {topic!r} (its "
                "topics or topics.regex): a partition of another topic is no offset of its"
            )
        if offset is not None:
            positions[(topic, number)] = _kafka_offset(offset, f"{where}.offset")
    return positions


def _kafka_entries(
    entries: Sequence[OffsetEntry], label: str
) -> Iterator[tuple[str, str, int, object]]:
    """Each entry of a request naming Kafka partitions as Connect does: where it stands
    (`label[i]`), its topic and partition, and its offset as given; a partition given
    twice is refused."""
    seen: set[tuple[str, int]] = set()
    for index, (partition, offset) in enumerate(entries):
        where = f"{label}[{index}]"
        topic, number = _kafka_partition(partition, f"{where}.partition")
        if (topic, number) in seen:
            raise OffsetsError(f"{where}.partition: {topic}:{number} is given twice")
        seen.add((topic, number))
        yield where, topic, number, offset


def _sink_topics(config: Mapping[str, str]) -> Callable[[str], bool]:
    """Whether the sink reads a topic, by Connect's sink keys `topics`/`topics.regex`."""
    named = {topic.strip() for topic in config.get("topics", "").split(",") if topic.strip()}
    regex = config.get("topics.regex", "").strip()
    pattern = compiled_pattern(regex) if regex and pattern_problem(regex) is None else None

    def reads(topic: str) -> bool:
        return topic in named or (pattern is not None and pattern.fullmatch(topic) is not None)

    return reads


def _kafka_partition(partition: object, where: str) -> tuple[str, int]:
    if not isinstance(partition, dict) or set(partition) != {KAFKA_TOPIC, KAFKA_PARTITION}:
        raise OffsetsError(
            f'{where} must be {{"{KAFKA_TOPIC}": topic, "{KAFKA_PARTITION}": n}}, a Kafka '
            f"partition as a sink's offsets name it (got {_shown(partition)})"
        )
    topic = partition[KAFKA_TOPIC]
    if not isinstance(topic, str) or not topic.strip():
        raise OffsetsError(f"{where}.{KAFKA_TOPIC} must be a topic name (got {_shown(topic)})")
    return topic, _number(partition[KAFKA_PARTITION], f"{where}.{KAFKA_PARTITION}", MAX_PARTITION)


def _kafka_offset(offset: object, where: str) -> int:
    if not isinstance(offset, dict) or set(offset) != {KAFKA_OFFSET}:
        raise OffsetsError(
            f'{where} must be null or {{"{KAFKA_OFFSET}": n}}, the next offset to read '
            f"(got {_shown(offset)})"
        )
    return _number(offset[KAFKA_OFFSET], f"{where}.{KAFKA_OFFSET}", MAX_POSITION)


def _number(value: object, where: str, largest: int) -> int:
    """A number as Connect takes it: a JSON integer or its digits as a string."""
    number = int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else value
    if _is_index(number) and number <= largest:
        return number
    raise OffsetsError(f"{where} must be an integer from 0 to {largest} (got {_shown(value)})")


def _source_marks(entries: Sequence[OffsetEntry], config: Mapping[str, str]) -> dict[int, Any]:
    tasks_max = config.get("tasks.max", "1").strip()
    task_count = int(tasks_max) if tasks_max.isdigit() else 1
    marks: dict[int, Any] = {}
    seen: set[int] = set()
    for index, (partition, offset) in enumerate(entries):
        where = f"initial_offsets[{index}]"
        task, source = task_partition(partition, f"{where}.partition")
        if task >= task_count:
            raise OffsetsError(
                f"{where}.partition: the connector has no task {task} (tasks.max={task_count})"
            )
        if source != 0:
            raise OffsetsError(
                f"{where}.partition: a new connector's task starts with offsets for its "
                "source 0 only (how many sources its query reads shows once it has run)"
            )
        if task in seen:
            raise OffsetsError(f"{where}.partition: task {task} is given twice")
        seen.add(task)
        if offset is not None:
            check_offset(offset, f"{where}.offset")
            marks[task] = offset
    return marks


SinkEntry = tuple[dict[str, object], dict[str, int]]
"""One partition of a Kafka sink's offsets as Connect shows it: `{"kafka_topic",
"kafka_partition"}` and `{"kafka_offset"}`."""


def sink_entries(offsets: Sequence[SourceOffset]) -> list[SinkEntry]:
    """A Kafka sink's committed offsets in Connect's shape (KIP-875), by topic partition
    and not by task: a caller of Connect's API knows partitions, and which task reads one
    changes with `tasks.max`. Each task's checkpoint holds the Kafka source's own JSON,
    `{topic: {partition: next offset}}`; the hand-over between tasks retires an old
    checkpoint as it gives its partitions on, so no partition is in two."""
    return [
        ({KAFKA_TOPIC: topic, KAFKA_PARTITION: partition}, {KAFKA_OFFSET: position})
        for (topic, partition), (_, position) in sorted(_sink_holders(offsets).items())
    ]


def sink_alterations(
    entries: Sequence[OffsetEntry], committed: Sequence[SourceOffset]
) -> dict[int, dict[int, Any]]:
    """Connect-shaped `PATCH` entries of a Kafka sink as the new end offset of each task
    checkpoint that holds one of the partitions (`offsets[task][source]`), the others of
    its partitions kept; raises `OffsetsError` naming the first entry that is wrong.

    A partition no checkpoint holds is refused rather than guessed at: its task takes it
    from `starting.offsets` or the hand-over file at its first batch. A null offset is
    refused too: a Spark checkpoint cannot forget one partition (`DELETE .../offsets`
    resets them all)."""
    holders = _sink_holders(committed)
    altered: dict[int, dict[int, Any]] = {}
    for where, topic, number, offset in _kafka_entries(entries, "offsets"):
        if offset is None:
            raise OffsetsError(
                f"{where}.offset: a sink's partition cannot be reset alone here (a task's "
                "checkpoint keeps all its partitions); give an offset, or DELETE the "
                "connector's offsets to reset them all"
            )
        position = _kafka_offset(offset, f"{where}.offset")
        held = holders.get((topic, number))
        if held is None:
            raise OffsetsError(
                f"{where}.partition: no task of the connector has committed {topic}:{number} "
                "yet; its task starts it from starting.offsets (or the connector's initial "
                "offsets) at its first batch"
            )
        holder, _ = held
        by_source = altered.setdefault(holder.task, {})
        shaped = by_source.setdefault(holder.source, json.loads(json.dumps(holder.offset)))
        shaped[topic][str(number)] = position
    return altered


def _sink_holders(
    offsets: Sequence[SourceOffset],
) -> dict[tuple[str, int], tuple[SourceOffset, int]]:
    """Each topic partition of the Kafka sources' offsets, with the task's offset that
    holds it and its position."""
    holders: dict[tuple[str, int], tuple[SourceOffset, int]] = {}
    for held in offsets:
        if not isinstance(held.offset, dict):
            continue
        for topic, partitions in held.offset.items():
            if isinstance(partitions, dict):
                for partition, position in partitions.items():
                    holders[(topic, int(partition))] = (held, position)
    return holders
