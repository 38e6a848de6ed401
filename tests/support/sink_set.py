"""The Kafka sinks side by side: `kafka-to-files`, `-delta`, `-iceberg` (hadoop catalog)
and `-jdbc` (PostgreSQL), each a connector with a topic of its own, on one worker.

A test that checks one behaviour of every sink (a broker restart, offsets altered, a
secured broker) drives them in lock-step, so their Spark starts and batches overlap
instead of adding up. Each table is read back without Spark (parquet, delta-rs,
pyiceberg, psycopg2): a reader sharing the writer's code would share its bugs. Every
record's key is unique (`key-<n>`), so counting keys tells a lost record from a doubled
one.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.file_sink import committed_records
from tests.support.kafka_topics import create_topic
from tests.support.lakehouse import delta_rows, iceberg_rows
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import free_port
from worker.kafka.client import BlockingKafka, Outgoing
from worker.kafka.connection import KafkaConnection

SINKS = ("files", "delta", "iceberg", "jdbc")
TIMEOUT_S = 240

SCHEMA = {"type": "struct", "fields": [{"field": "key", "type": "string", "optional": False}]}


def records(numbers: Iterable[int]) -> list[Outgoing]:
    """Record `n`: key `key-n`, value Connect's JSON with a schema (one string field
    `key`), which kafka-to-jdbc makes a row of and the other sinks keep as bytes."""
    return [
        Outgoing(
            f"key-{n}".encode(),
            json.dumps({"schema": SCHEMA, "payload": {"key": f"key-{n}"}}).encode(),
        )
        for n in numbers
    ]


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class SinkSet:
    """One connector per sink, named `<prefix>-<sink>`, reading `topics[sink]`."""

    prefix: str
    root: Path
    connection: KafkaConnection
    """The broker the connectors read, and how a test's client logs in to it."""
    topics: Mapping[str, str]
    postgres: PostgresServer | None = None
    """Needed when `jdbc` is one of the sinks."""
    common: Mapping[str, str] | None = None
    """Settings every connector gets besides its sink's (e.g. `kafka.client`)."""

    @property
    def bootstrap_servers(self) -> str:
        return self.connection.bootstrap_servers

    def open(self, client_id: str) -> BlockingKafka:
        return self.connection.open(client_id)

    def publish(self, numbers: Iterable[int]) -> None:
        """`records(numbers)` to every sink's topic; returns once the broker has them."""
        batch = records(numbers)
        with self.open("test-producer") as kafka:
            for topic in self.topics.values():
                kafka.publish(topic, batch)

    @property
    def sinks(self) -> tuple[str, ...]:
        return tuple(self.topics)

    def name(self, sink: str) -> str:
        return f"{self.prefix}-{sink}"

    @property
    def _table(self) -> str:
        return f"t{self.prefix.replace('-', '_')}"

    def config(self, sink: str, **extra: str) -> dict[str, str]:
        shared = {
            "kafka.bootstrap.servers": self.bootstrap_servers,
            "topics": self.topics[sink],
            "trigger.interval.ms": "500",
            "tasks.max": "1",
            **(self.common or {}),
        }
        own: dict[str, str]
        if sink == "files":
            own = {"connector.class": "kafka-to-files", "output.path": str(self.root / "files")}
        elif sink == "delta":
            own = {"connector.class": "kafka-to-delta", "table.path": str(self.root / "delta")}
        elif sink == "iceberg":
            own = {
                "connector.class": "kafka-to-iceberg",
                "iceberg.catalog.type": "hadoop",
                "iceberg.catalog.warehouse": str(self.root / "iceberg"),
                "iceberg.tables": f"shop.{self._table}",
            }
        else:
            assert self.postgres is not None, "kafka-to-jdbc needs a PostgreSQL server"
            own = {
                "connector.class": "kafka-to-jdbc",
                **self.postgres.connection_config(),
                "key.converter": "string",
                "value.converter": "json",
                "auto.create": "true",
                "table.name.format": self._table,
            }
        return {**shared, **own, **extra}

    def keys(self, sink: str) -> Counter[str]:
        """How often each key is in the sink's table now; none before it exists."""
        return Counter(_text(key) for key in self._keys(sink))

    def _keys(self, sink: str) -> list[object]:
        if sink == "files":
            return [key for key, _, _ in committed_records(self.root / "files")]
        if sink == "delta":
            return [row["key"] for row in delta_rows(self.root / "delta")]
        if sink == "iceberg":
            return [
                row["key"] for row in iceberg_rows(self.root / "iceberg", f"shop.{self._table}")
            ]
        assert self.postgres is not None
        try:
            return [key for (key,) in self.postgres.execute(f'SELECT key FROM "{self._table}"')]
        except Exception:  # the table is made with the first batch
            return []

    def wait_keys(self, numbers: Iterable[int], what: str, timeout_s: float = TIMEOUT_S) -> None:
        """Until every sink holds at least the keys of `numbers` (then check `once`)."""
        wanted = {f"key-{n}" for n in numbers}
        for sink in self.sinks:
            wait_until(
                lambda sink=sink: self.keys(sink),  # type: ignore[misc]
                timeout_s,
                what=f"{self.name(sink)}: {what}",
                until=lambda found: wanted <= set(found),
            )

    def once(self, numbers: Iterable[int]) -> dict[str, str | None]:
        """Per sink, None when it holds exactly the keys of `numbers`, each once; else
        what is wrong."""
        return {sink: _once(self.keys(sink), numbers) for sink in self.sinks}


def _once(found: Counter[str], numbers: Iterable[int]) -> str | None:
    wanted = {f"key-{n}" for n in numbers}
    lost = wanted - set(found)
    extra = set(found) - wanted
    doubled = sorted(key for key, count in found.items() if count > 1)
    if not (lost or extra or doubled):
        return None
    return (
        f"{len(lost)} lost (e.g. {sorted(lost)[:3]}), {len(extra)} not sent or skipped "
        f"(e.g. {sorted(extra)[:3]}), {len(doubled)} doubled (e.g. {doubled[:3]})"
    )


def sink_set(
    prefix: str,
    root: Path,
    connection: KafkaConnection,
    partitions: int,
    postgres: PostgresServer | None = None,
    common: Mapping[str, str] | None = None,
) -> SinkSet:
    """A set of every sink with a fresh topic each, of `partitions` partitions."""
    topics = {sink: f"{prefix}-{sink}-{free_port()}" for sink in SINKS}
    for topic in topics.values():
        create_topic(connection.bootstrap_servers, topic, partitions, connection.security())
    return SinkSet(prefix, root, connection, topics, postgres, common)
