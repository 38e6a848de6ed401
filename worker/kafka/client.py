"""A blocking Kafka client for the places Spark calls Python synchronously.

Spark runs a Python data source's planning calls and its reads and writes in plain
Python processes that expect blocking functions, so this wraps aiokafka in a private
event loop. aiokafka is the client the herder already uses for group membership: one
client to install, to learn and to trust against the brokers we run on, with explicit
partition assignment and seeking (what exactly-once reading needs), headers, and C
record parsing. Its costs, an event loop per client and pure-Python produce, are
measured in tests/bench/kafka_to_files_throughput.py.

End offsets come from a fetch's high watermark, not from ListOffsets: the embedded
broker (Tansu 0.x) answers ListOffsets(latest) with the base offset of the newest record
batch plus one, which for batches of more than one record is short of the end. A fetch
reports the true high watermark on every broker.

A client opened with `read_committed` skips what aborted transactions wrote, and its end
offsets are the last stable offsets: what is settled (committed or aborted) now.
Transactions are the producer's: `start_transactions` makes it the producer of one
`transactional.id`, which fences every earlier producer of that id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import (
    InvalidProducerEpoch,
    KafkaError,
    ProducerFenced,
    TopicAlreadyExistsError,
    UnknownError,
    UnsupportedVersionError,
    for_code,
)

from worker.kafka.security import PLAINTEXT_CLIENT, KafkaClientSecurity
from worker.kafka.topic_creation import BROKER_DEFAULT, NewTopicSpec

T = TypeVar("T")

FETCH_MAX_RECORDS: Final = 50_000
PROBE_WAIT_MS: Final = 1
REQUEST_TIMEOUT_MS: Final = 30_000
FETCH_STALL_S: Final = 2 * REQUEST_TIMEOUT_MS / 1000
METADATA_POLL_S: Final = 0.1

IsolationLevel = Literal["read_uncommitted", "read_committed"]
FENCED_ERRORS: Final = (ProducerFenced, InvalidProducerEpoch)
REFUSED_TRANSACTIONS: Final = (UnknownError, UnsupportedVersionError)
"""How a broker without transactions answers InitProducerId for a transactional id
(Tansu 0.x: UnknownError)."""


class KafkaUnavailableError(RuntimeError):
    """A topic or partition the task needs does not exist or cannot be reached."""


class TransactionsUnsupportedError(KafkaUnavailableError):
    """The broker refused to give a transactional id a producer epoch."""


class TopicCreationRefusedError(KafkaUnavailableError):
    """The broker would not create a topic (a bad config, too few brokers, no ACL)."""


class ProducerFencedError(KafkaUnavailableError):
    """A newer producer of this transactional id started: this one may not send again."""


@dataclass(frozen=True)
class Record:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    timestamp_type: int
    headers: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Outgoing:
    """A record to publish: its partition is chosen by key unless given."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    partition: int | None = None


class BlockingKafka:
    """One consumer and (on first use) one producer on a private event loop.

    Not thread-safe; use one per thread or process, and `close()` it (or use `with`).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        client_id: str,
        security: KafkaClientSecurity = PLAINTEXT_CLIENT,
        isolation_level: IsolationLevel = "read_uncommitted",
    ) -> None:
        self._bootstrap_servers = bootstrap_servers
        self._client_id = client_id
        self._security = security
        self._isolation_level = isolation_level
        self._loop = asyncio.new_event_loop()
        self._producer: AIOKafkaProducer | None = None
        self._admin: AIOKafkaAdminClient | None = None
        self._consumer = self._run(self._start_consumer())

    async def _start_consumer(self) -> AIOKafkaConsumer:
        """aiokafka clients bind to the running loop, so they are made inside it."""
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap_servers,
            client_id=self._client_id,
            enable_auto_commit=False,
            auto_offset_reset="none",
            fetch_max_wait_ms=PROBE_WAIT_MS,
            max_partition_fetch_bytes=8 << 20,
            fetch_max_bytes=64 << 20,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            isolation_level=self._isolation_level,
            **self._security.aiokafka_options(),
        )
        await consumer.start()
        return consumer

    def __enter__(self) -> BlockingKafka:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._run(self._consumer.stop())
            if self._producer is not None:
                self._run(self._producer.stop())
            if self._admin is not None:
                self._run(self._admin.close())
        finally:
            self._loop.close()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coroutine)

    def partitions(self, topic: str) -> list[int]:
        """The topic's partitions; a topic that does not exist is a user's error."""
        found = self._run(self._partitions(topic))
        if not found:
            raise KafkaUnavailableError(
                f"Kafka topic {topic!r} does not exist on {self._bootstrap_servers}"
            )
        return found

    def topic_exists(self, topic: str) -> bool:
        return bool(self._run(self._partitions(topic)))

    def topics(self) -> set[str]:
        """Every topic the broker lists now (what a `topics.regex` chooses from)."""
        return self._run(self._topics())

    async def _topics(self) -> set[str]:
        cluster = await self._consumer._client.fetch_all_metadata()
        return set(cluster.topics())

    async def _partitions(self, topic: str) -> list[int]:
        # The metadata of every topic, fetched now: the consumer's own metadata tracks only
        # the topics it was told about (Apache Kafka answers a request for no topics with
        # none; Tansu with all of them), and aiokafka exposes the fresh one only this way.
        # Never a Metadata request naming the topic: a broker with auto.create.topics.enable
        # would create it with its own defaults.
        cluster = await self._consumer._client.fetch_all_metadata()
        return sorted(cluster.partitions_for_topic(topic) or ())

    def ensure_topic(self, spec: NewTopicSpec) -> bool:
        """Create the topic `spec` describes unless it exists, and return once this client
        sees it: True if this call created it. A topic another client created meanwhile
        (a racing task: TopicAlreadyExists) counts as there; any other refusal raises
        `TopicCreationRefusedError` with the broker's reason and the settings behind
        `spec`. What an existing topic is like is not checked, as in Connect."""
        return self._run(self._ensure_topic(spec))

    async def _admin_client(self) -> AIOKafkaAdminClient:
        """Made on first use, on this client's loop; one that cannot start is closed."""
        if self._admin is None:
            admin = AIOKafkaAdminClient(
                bootstrap_servers=self._bootstrap_servers,
                client_id=self._client_id,
                request_timeout_ms=REQUEST_TIMEOUT_MS,
                **self._security.aiokafka_options(),
            )
            try:
                await admin.start()
            except BaseException:
                await admin.close()
                raise
            self._admin = admin
        return self._admin

    async def _ensure_topic(self, spec: NewTopicSpec) -> bool:
        if await self._partitions(spec.name):
            return False
        refused = f"Kafka at {self._bootstrap_servers} refused to create topic {spec.name!r} "
        refused += f"({spec.describe()}" + (f"; set by {spec.origin})" if spec.origin else ")")
        admin = await self._admin_client()
        # aiokafka lets -1 (the broker's default) through only beside a replica assignment,
        # and positive counts only without one: an empty one sends neither.
        leaves_to_broker = BROKER_DEFAULT in (spec.partitions, spec.replication_factor)
        topic = NewTopic(
            spec.name,
            spec.partitions,
            spec.replication_factor,
            replica_assignments={} if leaves_to_broker else None,
            topic_configs=dict(spec.configs),
        )
        try:
            response = await admin.create_topics([topic])
        except KafkaError as exc:
            raise TopicCreationRefusedError(f"{refused}: {exc}") from exc
        created = True
        for _, code, message in response.topic_errors:
            if code == TopicAlreadyExistsError.errno:
                created = False
            elif code != 0:
                name = for_code(code).__name__
                raise TopicCreationRefusedError(f"{refused}: {message} ({name}, error {code})")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REQUEST_TIMEOUT_MS / 1000
        while not await self._partitions(spec.name):
            if loop.time() > deadline:
                raise KafkaUnavailableError(
                    f"Kafka topic {spec.name!r} was created on {self._bootstrap_servers} "
                    f"but is not in its metadata {REQUEST_TIMEOUT_MS // 1000} s later"
                )
            await asyncio.sleep(METADATA_POLL_S)
        return created

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition, or under `read_committed`
        its last stable offset (see the module docstring)."""
        return self._run(self._end_offsets(partitions))

    async def _end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        listed = await self._consumer.end_offsets(list(partitions))
        await self._assign_at({tp: max(0, listed[tp] - 1) for tp in partitions})
        ends: dict[TopicPartition, int] = {}
        deadline = asyncio.get_running_loop().time() + REQUEST_TIMEOUT_MS / 1000
        while len(ends) < len(partitions):
            if asyncio.get_running_loop().time() > deadline:
                raise KafkaUnavailableError(f"Kafka at {self._bootstrap_servers}: no end offset")
            await self._consumer.getmany(*partitions, timeout_ms=PROBE_WAIT_MS, max_records=1)
            for tp in partitions:
                end = self._fetched_end(tp)
                if end is not None:
                    ends[tp] = end
        return ends

    def _fetched_end(self, tp: TopicPartition) -> int | None:
        if self._isolation_level == "read_committed":
            stable = self._consumer.last_stable_offset(tp)
            return None if stable is None or stable < 0 else int(stable)
        highwater = self._consumer.highwater(tp)
        return None if highwater is None else int(highwater)

    async def _assign_at(self, positions: Mapping[TopicPartition, int]) -> None:
        """A new assignment also forgets the high watermarks of earlier fetches (and
        aiokafka creates its partition state on the running loop)."""
        self._consumer.assign(list(positions))
        for tp, offset in positions.items():
            self._consumer.seek(tp, offset)

    def beginning_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        found = self._run(self._consumer.beginning_offsets(list(partitions)))
        return {tp: int(offset) for tp, offset in found.items()}

    def fetch(
        self, tp: TopicPartition, start: int, end: int, stall_s: float = FETCH_STALL_S
    ) -> Iterator[list[Record]]:
        """The records at offsets [start, end), chunk by chunk; a gap the broker no longer
        holds (retention) raises rather than being skipped, and so does a fetch that
        moves no further for `stall_s` (the records below `end` are there to be had)."""
        self._run(self._assign_at({tp: start}))
        position, moved_at = start, time.monotonic()
        while position < end:
            if time.monotonic() - moved_at > stall_s:
                stuck = f"{tp.topic}-{tp.partition} stuck at offset {position} for {stall_s:g} s"
                raise KafkaUnavailableError(f"Kafka at {self._bootstrap_servers}: {stuck}")
            batches = self._run(
                self._consumer.getmany(tp, timeout_ms=1000, max_records=FETCH_MAX_RECORDS)
            )
            chunk = [_record(m) for m in batches.get(tp, []) if m.offset < end]
            if chunk:
                position = chunk[-1].offset + 1
                yield chunk
                moved_at = time.monotonic()
            elif (moved := int(self._run(self._consumer.position(tp)))) > position:
                position, moved_at = moved, time.monotonic()

    def publish(self, topic: str, records: Sequence[Outgoing]) -> None:
        """Send every record and return once the broker acknowledged all of them
        (acks=all); any failure raises."""
        self._run(self._publish(topic, records))

    async def _start_producer(self, **transactions: Any) -> AIOKafkaProducer:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None
        producer = AIOKafkaProducer(
            bootstrap_servers=self._bootstrap_servers,
            client_id=self._client_id,
            acks="all",
            linger_ms=5,
            max_batch_size=1 << 20,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            **transactions,
            **self._security.aiokafka_options(),
        )
        try:
            await producer.start()
        except BaseException:
            await producer.stop()
            raise
        self._producer = producer
        return producer

    def start_transactions(self, transactional_id: str, timeout_ms: int) -> None:
        """Publish from now on as the producer of `transactional_id`, inside transactions.

        The broker gives the id a new epoch: a transaction an earlier producer of the id
        left open is aborted, and that producer can neither send nor commit again. A
        transaction open longer than `timeout_ms` is aborted by the broker.
        """
        try:
            self._run(
                self._start_producer(
                    transactional_id=transactional_id, transaction_timeout_ms=timeout_ms
                )
            )
        except REFUSED_TRANSACTIONS as exc:
            raise TransactionsUnsupportedError(
                f"Kafka at {self._bootstrap_servers} offers no transactions ({exc})"
            ) from exc

    def begin_transaction(self) -> None:
        self._run(self._transactional().begin_transaction())

    def commit_transaction(self) -> None:
        """Make what this transaction sent visible to `read_committed` readers; raises
        `ProducerFencedError` when a newer producer of the id started meanwhile."""
        try:
            self._run(self._transactional().commit_transaction())
        except FENCED_ERRORS as exc:
            raise ProducerFencedError(f"Commit refused: {exc}") from exc

    def abort_transaction(self) -> None:
        self._run(self._transactional().abort_transaction())

    def _transactional(self) -> AIOKafkaProducer:
        if self._producer is None:
            raise RuntimeError("start_transactions first")
        return self._producer

    async def _publish(self, topic: str, records: Sequence[Outgoing]) -> None:
        producer = self._producer or await self._start_producer()
        sent = [
            await producer.send(
                topic,
                value=r.value,
                key=r.key,
                partition=r.partition,
                headers=list(r.headers),
            )
            for r in records
        ]
        await producer.flush()
        try:
            await asyncio.gather(*sent)
        except FENCED_ERRORS as exc:
            raise ProducerFencedError(f"Publishing to {topic!r} refused: {exc}") from exc
        except KafkaError as exc:
            raise KafkaUnavailableError(f"Publishing to {topic!r} failed: {exc}") from exc


def _record(message: Any) -> Record:
    return Record(
        offset=int(message.offset),
        key=message.key,
        value=message.value,
        timestamp_ms=int(message.timestamp),
        timestamp_type=int(message.timestamp_type),
        headers=tuple((str(k), bytes(v or b"")) for k, v in message.headers),
    )
