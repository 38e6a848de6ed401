"""Topics for connector tests: created, filled with keyed records, and read back whole."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.support.processes import free_port
from worker.kafka.client import BlockingKafka, IsolationLevel, Outgoing, Record
from worker.kafka.security import PLAINTEXT_CLIENT, KafkaClientSecurity


def create_topic(
    bootstrap_servers: str,
    name: str,
    partitions: int,
    security: KafkaClientSecurity = PLAINTEXT_CLIENT,
) -> None:
    async def create() -> None:
        admin = AIOKafkaAdminClient(
            bootstrap_servers=bootstrap_servers, **security.aiokafka_options()
        )
        await admin.start()
        try:
            await admin.create_topics([NewTopic(name, partitions, 1)])
        finally:
            await admin.close()

    asyncio.run(create())


def new_topic(bootstrap_servers: str, prefix: str, partitions: int) -> str:
    """A topic no other test uses (the broker lives for the whole session); its name."""
    name = f"{prefix}-{free_port()}"
    create_topic(bootstrap_servers, name, partitions)
    return name


def keyed(numbers: Iterable[int]) -> list[Outgoing]:
    """Record `n` has key `key-n` and value `value-n`: what a test looks for in the output."""
    return [Outgoing(f"key-{n}".encode(), f"value-{n}".encode()) for n in numbers]


def produce(bootstrap_servers: str, topic: str, records: list[Outgoing]) -> None:
    with BlockingKafka(bootstrap_servers, "test-producer") as kafka:
        kafka.publish(topic, records)


def read_topic(
    bootstrap_servers: str, topic: str, isolation_level: IsolationLevel = "read_uncommitted"
) -> list[Record]:
    """Every record in the topic now, partition by partition (under `read_committed`:
    every committed one, up to the first transaction still open)."""
    with BlockingKafka(bootstrap_servers, "test-reader", isolation_level=isolation_level) as kafka:
        partitions = [TopicPartition(topic, p) for p in kafka.partitions(topic)]
        ends = kafka.end_offsets(partitions)
        return [
            record
            for tp in partitions
            for chunk in kafka.fetch(tp, 0, ends[tp])
            for record in chunk
        ]
