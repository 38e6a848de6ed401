"""`sparkherd-kafka` as a streaming sink: every row published to a topic once, even when
Spark runs a batch again.

Spark's own Kafka sink is at-least-once: a batch that runs again after a crash is sent
again. This sink removes its own duplicates, on any broker:

* every row names its `origin` (for files-to-kafka, its file); the writer numbers the
  rows of each origin in the order Spark hands them over and sends origin and number as
  headers. A batch that runs again reads the same input in the same order, so its rows
  get the same identities. All rows of an origin must be in one Spark partition, in a
  deterministic order (one file read whole, never split).
* before a batch sends its first record, the topic's end offsets are recorded in an
  intent file under `progress.dir` (created once, atomically, by whichever partition of
  the batch comes first).
* a partition that finds its batch's intent already there may be running again: it
  reads the topic from the recorded offsets, collects the identities this sink already
  sent, and sends only the others.

A task's claim (option `claim`) is checked before each chunk is sent, so a worker that
lost the task stops publishing before its next chunk. Without transactions, what it had
in flight can still land after the new owner looked: a duplicate, one chunk wide at most.

With `transactional.id.prefix` (a broker with transactions, see `transactions.py`), each
partition of a batch is one transaction of its own producer, the claim is checked again
before the commit, and the replay check reads `read_committed`: a partition's rows are
all there or none, and a zombie that lost its task is fenced by the new owner's producer
epoch, so nothing it had in flight ever becomes visible.

Options: `bootstrap.servers` (and the security keys of `KafkaConnection`), `topic`,
`sink.id` (names this sink in the headers; unique per task), `progress.dir`, and
optionally `claim` (`Claim.encode()`), `transactional.id.prefix`,
`transaction.timeout.ms` and `topics`. Input columns: `origin` (string), `key` and
`value` (string or binary, key may be null), and with `topics` (a comma list: every
topic a row may name, for the intent) a `topic` column routing each row (jdbc-to-kafka
sends each table to a topic of its own from one query).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Final, cast

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError
from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage

from worker.kafka.client import BlockingKafka, Outgoing, ProducerFencedError
from worker.kafka.connection import KafkaConnection
from worker.kafka.transactions import TransactionalIds
from worker.plugins.task_claims import Claim

BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
"""The local property Spark's micro-batch engine sets for the jobs of a batch."""
SINK_HEADER: Final = "sparkherd.sink"
ORIGIN_HEADER: Final = "sparkherd.origin"
SEQ_HEADER: Final = "sparkherd.seq"
CHUNK_ROWS: Final = 5_000
TRANSACTION_TIMEOUT_MS: Final = 60_000

Identity = tuple[str, int]
"""(origin, number of the row within its origin)."""


@dataclass(frozen=True)
class OutRow:
    origin: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    """The record's own headers, sent before the sink's (a dead letter queue record's, a
    transform's); a header may have no value."""
    topic: str | None = None
    """Where the row goes, when not to the batch's one topic (see `publish_batch`)."""


@dataclass(frozen=True)
class Published(WriterCommitMessage):  # type: ignore[misc]
    """What one partition of a batch did: rows sent now, and rows found sent before."""

    sent: int
    skipped: int


class PublishFencedError(RuntimeError):
    """The task was claimed by another worker while this one was publishing."""


class IntentLog:
    """`<progress.dir>/<batch>.json`: a batch's topic end offsets before it sent anything."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory

    def open(
        self, batch: int, current_ends: Callable[[], Mapping[TopicPartition, int]]
    ) -> tuple[dict[TopicPartition, int], bool]:
        """The batch's intent, and whether it existed before this call (a replay, or a
        sibling partition of the same batch that started first)."""
        path = self._directory / f"{batch}.json"
        if path.exists():
            return _read_intent(path), True
        self._directory.mkdir(parents=True, exist_ok=True)
        body = json.dumps({f"{tp.topic}:{tp.partition}": end for tp, end in current_ends().items()})
        draft = self._directory / f".{batch}.{secrets.token_hex(8)}"
        draft.write_text(body)
        try:
            os.link(draft, path)
        except FileExistsError:
            return _read_intent(path), True
        finally:
            draft.unlink()
        return _read_intent(path), False

    def forget_before(self, batch: int) -> None:
        """Spark never runs a batch again once a later one started."""
        for path in self._directory.glob("*.json"):
            if path.stem.isdigit() and int(path.stem) < batch:
                path.unlink(missing_ok=True)


def _read_intent(path: Path) -> dict[TopicPartition, int]:
    ends: dict[TopicPartition, int] = {}
    for name, end in json.loads(path.read_text()).items():
        topic, _, partition = name.rpartition(":")
        ends[TopicPartition(topic, int(partition))] = int(end)
    return ends


def numbered(rows: Iterable[OutRow]) -> Iterator[tuple[Identity, OutRow]]:
    counts: dict[str, int] = {}
    for row in rows:
        seq = counts.get(row.origin, 0)
        counts[row.origin] = seq + 1
        yield (row.origin, seq), row


def already_published(
    kafka: BlockingKafka,
    sink_id: str,
    since: Mapping[TopicPartition, int],
    partitions: Sequence[TopicPartition],
) -> set[Identity]:
    """Identities this sink sent to `partitions` at or after `since` (partitions it does
    not name, added to the topic later, are read from their start)."""
    ends = kafka.end_offsets(partitions)
    found: set[Identity] = set()
    sink = sink_id.encode()
    for tp in partitions:
        for chunk in kafka.fetch(tp, since.get(tp, 0), ends[tp]):
            for record in chunk:
                headers = dict(record.headers)
                if headers.get(SINK_HEADER) == sink:
                    found.add((headers[ORIGIN_HEADER].decode(), int(headers[SEQ_HEADER])))
    return found


def publish_batch(
    kafka: BlockingKafka,
    topic: str,
    sink_id: str,
    intents: IntentLog,
    batch: int,
    rows: Iterable[OutRow],
    fenced_by: Callable[[], str | None] = lambda: None,
    transactional: bool = False,
    routed: Sequence[str] = (),
) -> Published:
    """Send the rows of one partition of one batch that this sink has not sent yet; in
    one transaction when `transactional` (the client's producer started them and its
    consumer reads `read_committed`). A row goes to `topic` unless it names its own
    (`OutRow.topic`): the intent holds the ends of `topic` and the `routed` topics known
    before the batch; one that a transform made from a record (a topic with the record's
    date) is checked for what this sink sent there from its start when the batch runs
    again."""
    topics = dict.fromkeys([topic, *routed])
    partitions = [TopicPartition(name, p) for name in topics for p in kafka.partitions(name)]
    since, seen_before = intents.open(batch, lambda: kafka.end_offsets(partitions))
    done = already_published(kafka, sink_id, since, partitions) if seen_before else set()
    looked_at = set(topics)

    def check_claim() -> None:
        holder = fenced_by()
        if holder is not None:
            raise PublishFencedError(f"Stopped publishing to {topic!r}: {holder} owns the task")

    sent = skipped = 0
    pending = numbered(rows)
    if transactional:
        kafka.begin_transaction()
    try:
        while chunk := list(islice(pending, CHUNK_ROWS)):
            unseen = {row.topic for _, row in chunk if row.topic} - looked_at
            looked_at |= unseen
            if seen_before and unseen:
                more = [TopicPartition(t, p) for t in unseen for p in kafka.partitions(t)]
                done |= already_published(kafka, sink_id, since, more)
            fresh = [
                (row.topic, _outgoing(sink_id, identity, row))
                for identity, row in chunk
                if identity not in done
            ]
            skipped += len(chunk) - len(fresh)
            check_claim()
            for destination, records in _by_topic(topic, fresh).items():
                kafka.publish(destination, records)
                sent += len(records)
        if transactional:
            check_claim()
            kafka.commit_transaction()
    except ProducerFencedError as exc:
        raise PublishFencedError(
            f"Stopped publishing to {topic!r}: a newer start of the task fenced this "
            f"producer ({exc})"
        ) from exc
    except BaseException:
        if transactional:
            with contextlib.suppress(KafkaError):
                kafka.abort_transaction()
        raise
    return Published(sent, skipped)


def _by_topic(
    default: str, records: Sequence[tuple[str | None, Outgoing]]
) -> dict[str, list[Outgoing]]:
    """The records per topic, each topic's in their order."""
    grouped: dict[str, list[Outgoing]] = {}
    for topic, record in records:
        grouped.setdefault(topic or default, []).append(record)
    return grouped


def _outgoing(sink_id: str, identity: Identity, row: OutRow) -> Outgoing:
    origin, seq = identity
    headers = (
        *row.headers,
        (SINK_HEADER, sink_id.encode()),
        (ORIGIN_HEADER, origin.encode()),
        (SEQ_HEADER, str(seq).encode()),
    )
    # aiokafka writes a header without a value (null), as Kafka has them.
    return Outgoing(row.key, row.value, cast("tuple[tuple[str, bytes], ...]", headers))


def _as_bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"key and value must be strings or binary, not {type(value).__name__}")


def _headers(row: object) -> tuple[tuple[str, bytes | None], ...]:
    """A row's `headers` column (what a transform wrote), when it has one."""
    if "headers" not in getattr(row, "__fields__", ()):
        return ()
    headers = row["headers"] or ()  # type: ignore[index]
    return tuple((str(h["key"]), _as_bytes(h["value"])) for h in headers)


class KafkaStreamWriter(DataSourceStreamWriter):  # type: ignore[misc]
    """Runs in Spark's Python workers (`write`) and on the driver (`commit`)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self._connection = KafkaConnection.from_options(options)
        self._topic = options["topic"]
        self._routed = [t for t in options.get("topics", "").split(",") if t]
        self._sink_id = options["sink.id"]
        self._progress = Path(options["progress.dir"])
        self._intents = IntentLog(self._progress)
        self._claim = options.get("claim")
        self._transactional_prefix = options.get("transactional.id.prefix")
        self._transaction_timeout_ms = int(
            options.get("transaction.timeout.ms", TRANSACTION_TIMEOUT_MS)
        )

    def write(self, iterator: Iterator[object]) -> Published:
        from pyspark import TaskContext

        context = TaskContext.get()
        batch = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
        if context is None or batch is None:
            raise RuntimeError("sparkherd-kafka writes only from a streaming query")
        claim = Claim.decode(self._claim) if self._claim else None
        fenced_by = claim.fenced_by if claim else lambda: None
        holder = fenced_by()
        if holder is not None:
            raise PublishFencedError(f"Not publishing to {self._topic!r}: {holder} owns the task")
        rows = (
            OutRow(
                str(row["origin"]),  # type: ignore[index]
                _as_bytes(row["key"]),  # type: ignore[index]
                _as_bytes(row["value"]),  # type: ignore[index]
                _headers(row),
                topic=str(row["topic"]) if self._routed else None,  # type: ignore[index]
            )
            for row in iterator
        )
        prefix = self._transactional_prefix
        with self._connection.open(
            f"sparkherd-{self._sink_id}",
            "read_uncommitted" if prefix is None else "read_committed",
        ) as kafka:
            if prefix is not None:
                ids = TransactionalIds(self._progress)
                kafka.start_transactions(
                    ids.for_partition(prefix, context.partitionId()),
                    self._transaction_timeout_ms,
                )
            return publish_batch(
                kafka,
                self._topic,
                self._sink_id,
                self._intents,
                int(batch),
                rows,
                fenced_by,
                transactional=prefix is not None,
                routed=self._routed,
            )

    def commit(self, messages: list[Published | None], batchId: int) -> None:
        with contextlib.suppress(OSError):
            self._intents.forget_before(batchId)

    def abort(self, messages: list[Published | None], batchId: int) -> None:
        """Nothing to undo: what was sent stays (or was aborted with its transaction),
        and a replay skips it."""
