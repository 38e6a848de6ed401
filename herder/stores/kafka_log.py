"""A compacted Kafka topic read as a changelog: every worker replays it into memory.

Kafka Connect keeps configs, statuses and offsets this way so any worker can rebuild the
cluster's state from the topics alone; `read_to_end` is the barrier that makes "I have
seen every write made before now" a checkable statement.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import RecordMetadata

from herder.cancellation import cancel_and_wait
from worker.kafka.security import PLAINTEXT_CLIENT, KafkaClientSecurity

log = logging.getLogger(__name__)

RecordHandler = Callable[[bytes, bytes | None, int], None]
"""Called with (key, value or None for a tombstone, offset) for every record, in order."""


class ChangeLog(Protocol):
    """What a store needs of its topic; `KafkaLog` is the real one, tests use memory."""

    @property
    def position(self) -> int: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, key: bytes, value: bytes | None) -> int: ...

    async def send_soon(self, key: bytes, value: bytes | None) -> asyncio.Future[int]: ...

    async def read_to_end(self, timeout_s: float = 30.0) -> int: ...

    async def read_through(self, offset: int, timeout_s: float = 30.0) -> None: ...


OpenLog = Callable[[RecordHandler], ChangeLog]
"""Opens a store's log, given the handler that applies each record to the store."""


class KafkaLog:
    """Writes and tails one single-partition topic, applying records through `on_record`."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        on_record: RecordHandler,
        security: KafkaClientSecurity = PLAINTEXT_CLIENT,
    ) -> None:
        self._bootstrap = bootstrap_servers
        self._security = security
        self._topic = topic
        self._partition = TopicPartition(topic, 0)
        self._on_record = on_record
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._ends: AIOKafkaConsumer | None = None
        self._reader: asyncio.Task[None] | None = None
        self._position = 0
        self._progress = asyncio.Condition()

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def position(self) -> int:
        """The offset of the next record to apply: everything before it is in memory."""
        return self._position

    async def start(self) -> None:
        self._producer = AIOKafkaProducer(
            bootstrap_servers=self._bootstrap,
            acks="all",
            enable_idempotence=False,
            **self._security.aiokafka_options(),
        )
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **self._security.aiokafka_options(),
        )
        self._ends = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            enable_auto_commit=False,
            **self._security.aiokafka_options(),
        )
        await self._producer.start()
        await self._consumer.start()
        await self._ends.start()
        self._consumer.assign([self._partition])
        await self._consumer.seek_to_beginning(self._partition)
        self._reader = asyncio.create_task(self._read_forever(), name=f"read-{self.topic}")

    async def stop(self) -> None:
        await cancel_and_wait(self._reader)
        self._reader = None
        for client in (self._ends, self._consumer, self._producer):
            if client is not None:
                await client.stop()
        self._ends = self._consumer = self._producer = None

    async def send(self, key: bytes, value: bytes | None) -> int:
        """Write one record and wait for the broker's acknowledgement; its offset."""
        return await (await self.send_soon(key, value))

    async def send_soon(self, key: bytes, value: bytes | None) -> asyncio.Future[int]:
        """Queue one record; the future gives its offset once the broker acknowledged it.
        Records queued one after another are written in that order (one partition, one
        producer), and several ride in one produce request."""
        assert self._producer is not None, "log not started"
        sent = await self._producer.send(self.topic, key=key, value=value, partition=0)
        return asyncio.ensure_future(_offset_of(sent))

    async def end_offset(self) -> int:
        """Asked on a connection of its own: the reader's has a fetch waiting at the
        broker (up to `fetch.max.wait.ms`, 500 ms), and the broker answers one request of
        a connection at a time, so asked there it took 0.3-0.5 s on a quiet topic."""
        assert self._ends is not None, "log not started"
        ends = await self._ends.end_offsets([self._partition])
        return int(ends[self._partition])

    async def read_to_end(self, timeout_s: float = 30.0) -> int:
        """Wait until every record written before this call has been applied; that offset."""
        end = await self.end_offset()
        async with asyncio.timeout(timeout_s), self._progress:
            await self._progress.wait_for(lambda: self._position >= end)
        return end

    async def read_through(self, offset: int, timeout_s: float = 30.0) -> None:
        """Wait until the record at `offset` (one this log wrote) has been applied: no
        request to the broker, where `read_to_end` asks for the end first."""
        async with asyncio.timeout(timeout_s), self._progress:
            await self._progress.wait_for(lambda: self._position > offset)

    async def _read_forever(self) -> None:
        assert self._consumer is not None
        while True:
            batches = await self._consumer.getmany(self._partition, timeout_ms=500)
            records = batches.get(self._partition, [])
            for record in records:
                try:
                    self._on_record(record.key, record.value, record.offset)
                except Exception:
                    log.exception("skipping unreadable record %s@%d", self.topic, record.offset)
            position = int(await self._consumer.position(self._partition))
            if position != self._position:
                self._position = position
                async with self._progress:
                    self._progress.notify_all()


async def _offset_of(sent: Awaitable[RecordMetadata]) -> int:
    return int((await sent).offset)
