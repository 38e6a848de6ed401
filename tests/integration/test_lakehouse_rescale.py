"""`tasks.max` of `kafka-to-delta`, `kafka-to-iceberg` (hadoop catalog) and `kafka-to-jdbc`
(PostgreSQL) changes 2 -> 1 -> 2 under a running producer, the three connectors at once
on one worker and Apache Kafka: each moved partition continues at the offset its old
task committed, and each table, read back without Spark (delta-rs, pyiceberg, psycopg2),
holds every record once. A task that takes over partitions writes under a new
checkpoint, so its sink's idempotence key (Delta's txnAppId, Iceberg's snapshot
property, the JDBC ledger's query id) is new too: what keeps a record from landing
twice is the offsets the take-over starts from, which this checks for each sink."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.kafka_topics import keyed, new_topic
from tests.support.lakehouse import delta_rows, iceberg_rows, keyed_once
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import ready_worker
from tests.support.rest_client import Api
from tests.support.running_producer import Producer
from worker.kafka.client import Outgoing

pytestmark = [pytest.mark.integration, pytest.mark.parallel, pytest.mark.long]

PARTITIONS = 2
ICEBERG_TABLE = "shop.rescaled"
JDBC_TABLE = "rescaled"
TIMEOUT_S = 180
TASKS = (2, 1, 2)
"""`tasks.max` in turn: one task takes both partitions over, then two split them again."""


def with_schema(numbers: Iterable[int]) -> list[Outgoing]:
    """`keyed`'s records with values kafka-to-jdbc can make rows of (Connect's JSON with
    a schema: one string field `key`)."""
    schema = {"type": "struct", "fields": [{"field": "key", "type": "string", "optional": False}]}
    return [
        Outgoing(
            f"key-{n}".encode(),
            json.dumps({"schema": schema, "payload": {"key": f"key-{n}"}}).encode(),
        )
        for n in numbers
    ]


def jdbc_rows(postgres: PostgresServer) -> list[dict[str, Any]]:
    """The table's rows as `keyed_once` reads them; none before the table exists. Each
    record's key is unique, so the key stands for its Kafka position too."""
    try:
        found = postgres.execute(f'SELECT key FROM "{JDBC_TABLE}"')
    except Exception:  # not created yet
        return []
    return [{"key": key, "partition": 0, "offset": key} for (key,) in found]


def test_delta_iceberg_and_jdbc_tables_hold_every_record_once_while_tasks_max_goes_2_1_2(
    broker: EmbeddedBroker, postgres: PostgresServer, tmp_path: Path
) -> None:
    servers = broker.bootstrap_servers
    topics = {
        sink: new_topic(servers, f"rescaled-{sink}", PARTITIONS)
        for sink in ("delta", "iceberg", "jdbc")
    }
    common = {
        "kafka.bootstrap.servers": servers,
        "kafka.client": "jvm",
        "trigger.interval.ms": "300",
    }
    configs = {
        "delta": {
            "connector.class": "kafka-to-delta",
            "topics": topics["delta"],
            "table.path": str(tmp_path / "delta"),
        },
        "iceberg": {
            "connector.class": "kafka-to-iceberg",
            "topics": topics["iceberg"],
            "iceberg.catalog.type": "hadoop",
            "iceberg.catalog.warehouse": str(tmp_path / "iceberg"),
            "iceberg.tables": ICEBERG_TABLE,
        },
        "jdbc": {
            "connector.class": "kafka-to-jdbc",
            "topics": topics["jdbc"],
            **postgres.connection_config(),
            "key.converter": "string",
            "value.converter": "json",
            "auto.create": "true",
            "table.name.format": JDBC_TABLE,
        },
    }
    readers: dict[str, Callable[[], list[dict[str, Any]]]] = {
        "delta": partial(delta_rows, tmp_path / "delta"),
        "iceberg": partial(iceberg_rows, tmp_path / "iceberg", ICEBERG_TABLE),
        "jdbc": partial(jdbc_rows, postgres),
    }

    def wait_written(count: int, what: str) -> None:
        for sink, read in readers.items():
            wait_until(
                read, TIMEOUT_S, what=f"{sink}: {what}", until=lambda rows: len(rows) >= count
            )

    producer = Producer(
        servers,
        {topics["delta"]: keyed, topics["iceberg"]: keyed, topics["jdbc"]: with_schema},
        burst=20,
    )
    with ready_worker("lakehouse-rescale", servers, tmp_path) as worker:
        api = Api(worker.url, timeout_s=TIMEOUT_S)
        producer.start()
        try:
            for step, tasks in enumerate(TASKS):
                for sink, config in configs.items():
                    api.call(
                        "PUT",
                        f"/connectors/rescaled-{sink}/config",
                        200 if step else 201,
                        json={**common, **config, "tasks.max": str(tasks)},
                    )
                for sink in configs:
                    api.wait_states(f"rescaled-{sink}", "RUNNING", ["RUNNING"] * tasks)
                if step < len(TASKS) - 1:  # the last round's wait is the one for every record
                    wait_written(producer.sent, f"records sent before {tasks} tasks ran, written")
        finally:
            produced = producer.finish()
        wait_written(produced, "every record written")
        log = worker.log_text()
    problems = {sink: keyed_once(read(), produced) for sink, read in readers.items()}
    assert problems == dict.fromkeys(readers), problems
    took_over = [sink for sink in configs if f"of connector rescaled-{sink} takes over" in log]
    assert took_over == list(configs), "each connector's tasks took partitions over"
