"""`sparkherd-kafka`'s streaming reader: Kafka partitions read into Spark by a Python
data source, for Sparks without the JVM Kafka connector.

Offsets are `{"<topic>": {"<partition>": <next offset>}}`, the JVM connector's own
shape, and each is the true end of what a batch read. Spark writes a batch's offsets to
the checkpoint before the batch runs and re-reads exactly that range if the batch has to
run again, so a file sink downstream gets every record once.

Options: `bootstrap.servers` and the security keys of `KafkaConnection`; `assign`, the
partitions to read as `topic:p,topic:q`; `starting.offsets`, `earliest` (default),
`latest` or each partition's as JSON (`{"<topic>": {"<partition>": <offset>}}`, -2 for
earliest and -1 for latest, as Spark's JVM source reads it), used only for a partition
that the checkpoint does not know yet;
`include.headers`, `true` to add the records' headers as a `headers` column of the type
Spark's JVM source gives with `includeHeaders` (default `false`, as there);
`max.offsets.per.batch`, the bound of `worker.kafka.batch_bound` (default none), with
`resume.offsets`, the end offsets of the newest batch the checkpoint planned (required
with the bound whenever the checkpoint has a batch: Spark tells a restarted reader only
the end of each new batch it asks for).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from aiokafka import TopicPartition
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from worker.kafka.batch_bound import capped_ends
from worker.kafka.client import BlockingKafka
from worker.kafka.connection import KafkaConnection

SCHEMA: Final = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset LONG, "
    "timestamp TIMESTAMP, timestampType INT"
)
HEADERS_FIELD: Final = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
INCLUDE_HEADERS: Final = "include.headers"
MAX_OFFSETS_PER_BATCH: Final = "max.offsets.per.batch"
RESUME_OFFSETS: Final = "resume.offsets"
Offsets = dict[str, dict[str, int]]
EARLIEST: Final = -2
LATEST: Final = -1


def include_headers(options: Mapping[str, str]) -> bool:
    return options.get(INCLUDE_HEADERS, "false").strip().lower() == "true"


def source_schema(options: Mapping[str, str]) -> str:
    """Spark's Kafka schema, with `headers` when the options ask for them."""
    return f"{SCHEMA}, {HEADERS_FIELD}" if include_headers(options) else SCHEMA


def format_assignment(partitions: Sequence[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}:{tp.partition}" for tp in partitions)


def parse_assignment(text: str) -> list[TopicPartition]:
    """`topic:p,topic:q` (topic names may hold colons; the partition follows the last)."""
    partitions = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        topic, _, partition = item.rpartition(":")
        if not topic or not partition.isdigit():
            raise ValueError(f"{item!r} is not topic:partition")
        partitions.append(TopicPartition(topic, int(partition)))
    return partitions


def parse_starting(text: str) -> tuple[int, dict[TopicPartition, int]]:
    """(-2 for earliest or -1 for latest, each partition's own start): `earliest`,
    `latest`, or JSON of each partition's (a partition it does not name: earliest)."""
    if text in ("earliest", "latest"):
        return (EARLIEST if text == "earliest" else LATEST), {}
    specific = _positions(
        text,
        "starting.offsets must be earliest, latest or JSON such as "
        f'{{"topic": {{"0": 42}}}}, not {text!r}',
    )
    if any(offset < EARLIEST for offset in specific.values()):
        raise ValueError(f"starting.offsets has an offset below -2: {text!r}")
    return EARLIEST, specific


def _as_offsets(positions: Mapping[TopicPartition, int]) -> Offsets:
    offsets: Offsets = {}
    for tp, offset in sorted(positions.items()):
        offsets.setdefault(tp.topic, {})[str(tp.partition)] = offset
    return offsets


def _position(offsets: Offsets, tp: TopicPartition) -> int | None:
    return offsets.get(tp.topic, {}).get(str(tp.partition))


def _positions(text: str, refusal: str) -> dict[TopicPartition, int]:
    """Offsets given as JSON (`{"<topic>": {"<partition>": <offset>}}`); `refusal` is the
    error's message for text of another shape."""
    try:
        offsets = json.loads(text)
        return {
            TopicPartition(topic, int(partition)): int(offset)
            for topic, by_partition in offsets.items()
            for partition, offset in by_partition.items()
        }
    except (ValueError, AttributeError, TypeError):
        raise ValueError(refusal) from None


@dataclass(frozen=True)
class KafkaRange(InputPartition):  # type: ignore[misc]
    """One batch's records of one Kafka partition: offsets [start, end)."""

    connection: KafkaConnection
    topic: str
    partition: int
    start: int
    end: int
    headers: bool = False


class KafkaStreamReader(DataSourceStreamReader):  # type: ignore[misc]
    """Plans batches on the driver (one client for the query's lifetime) and reads each
    partition's range in an executor with a client of its own."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._connection = KafkaConnection.from_options(options)
        self._assigned = parse_assignment(options["assign"])
        self._starting, self._specific = parse_starting(options.get("starting.offsets", "earliest"))
        self._headers = include_headers(options)
        self._kafka: BlockingKafka | None = None
        limit = options.get(MAX_OFFSETS_PER_BATCH)
        self._limit = int(limit) if limit else None
        resume = options.get(RESUME_OFFSETS)
        self._planned = (
            _positions(resume, f"{RESUME_OFFSETS} must be offsets as JSON, not {resume!r}")
            if resume
            else None
        )
        self._initial: dict[TopicPartition, int] | None = None

    def _client(self) -> BlockingKafka:
        if self._kafka is None:
            self._kafka = self._connection.open("sparkherd-kafka-source")
        return self._kafka

    def initialOffset(self) -> Offsets:
        return _as_offsets(self._initial_positions())

    def _initial_positions(self) -> dict[TopicPartition, int]:
        """Looked up once: Spark asks for the first batch's end before its start, and the
        bound of that end must count from the very start Spark then gets."""
        if self._initial is None:
            self._initial = self._starting_positions(self._assigned)
        return self._initial

    def _starting_positions(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        given = {tp: self._specific.get(tp, self._starting) for tp in partitions}
        ends = [tp for tp, at in given.items() if at == LATEST]
        beginnings = [tp for tp, at in given.items() if at == EARLIEST]
        return {
            **{tp: at for tp, at in given.items() if at >= 0},
            **(self._client().end_offsets(ends) if ends else {}),
            **(self._client().beginning_offsets(beginnings) if beginnings else {}),
        }

    def latestOffset(self) -> Offsets:
        """The partitions' ends, or with a bound, the next batch's: Spark reads from the
        previous batch's end to the end answered here."""
        ends = self._client().end_offsets(self._assigned)
        if self._limit is not None:
            ends = capped_ends(self._batch_starts(), ends, self._limit)
            self._planned = ends
        return _as_offsets(ends)

    def _batch_starts(self) -> dict[TopicPartition, int]:
        """Where the next batch begins: after the newest batch planned, else at the initial
        offsets; a partition new to both at `starting.offsets`."""
        known = self._planned if self._planned is not None else self._initial_positions()
        new = [tp for tp in self._assigned if tp not in known]
        return {
            **{tp: known[tp] for tp in self._assigned if tp in known},
            **(self._starting_positions(new) if new else {}),
        }

    def partitions(self, start: Offsets, end: Offsets) -> list[KafkaRange]:
        """A partition that is new to the checkpoint starts at `starting.offsets`."""
        new = [tp for tp in self._assigned if _position(start, tp) is None]
        starting = self._starting_positions(new) if new else {}
        ranges = []
        for tp in self._assigned:
            first = _position(start, tp)
            last = _position(end, tp)
            first = starting[tp] if first is None else first
            if last is not None and last > first:
                ranges.append(
                    KafkaRange(self._connection, tp.topic, tp.partition, first, last, self._headers)
                )
        return ranges

    def read(self, partition: KafkaRange) -> Iterator[tuple[object, ...]]:
        tp = TopicPartition(partition.topic, partition.partition)
        with partition.connection.open("sparkherd-kafka-source") as kafka:
            for chunk in kafka.fetch(tp, partition.start, partition.end):
                for r in chunk:
                    row = (
                        r.key,
                        r.value,
                        tp.topic,
                        tp.partition,
                        r.offset,
                        datetime.fromtimestamp(r.timestamp_ms / 1000, UTC),
                        r.timestamp_type,
                    )
                    yield (*row, list(r.headers)) if partition.headers else row

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the checkpoint, not Kafka, holds the task's position."""

    def stop(self) -> None:
        if self._kafka is not None:
            self._kafka.close()
            self._kafka = None
