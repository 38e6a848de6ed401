"""Lakehouse tables through a rolling bounce (issue 31): two workers, a producer that
never pauses, and a `kafka-to-delta` and a `kafka-to-iceberg` connector of two tasks
each on one topic. Each worker is sent SIGTERM in turn (its main process alone, as
kubelet does) and started again under the same address; tasks move mid-stream, each
handed off between two batches or replayed from its checkpoint. Afterwards both tables
hold every produced record exactly once, as readers that are not Spark (delta-rs,
pyiceberg) see them.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.bounce import restart_in_place
from tests.support.cluster import Cluster
from tests.support.kafka_topics import keyed, new_topic
from tests.support.lakehouse import delta_rows, iceberg_rows, keyed_once
from tests.support.polling import wait_until
from worker.kafka.client import BlockingKafka

pytestmark = [pytest.mark.integration, pytest.mark.parallel, pytest.mark.long]

WORKERS = 2
TASKS_EACH = 2
PARTITIONS = 4
GRACE_S = 60.0
TABLE = "lake.events"


class SteadyProducer:
    """Records `key-0`, `key-1`, ... in small batches every tenth of a second until the
    block ends; `produced` is how many the broker acknowledged."""

    def __init__(self, bootstrap_servers: str, topic: str) -> None:
        self._bootstrap_servers = bootstrap_servers
        self._topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="steady-producer")
        self.produced = 0

    def _run(self) -> None:
        with BlockingKafka(self._bootstrap_servers, "steady-producer") as kafka:
            while not self._stop.wait(0.1):
                kafka.publish(self._topic, keyed(range(self.produced, self.produced + 10)))
                self.produced += 10

    def __enter__(self) -> SteadyProducer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(60)


def test_both_tables_hold_every_record_once_through_a_rolling_bounce(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "lake-bounce", PARTITIONS)
    delta_table, warehouse = tmp_path / "delta" / "events", tmp_path / "warehouse"
    common = {
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "tasks.max": str(TASKS_EACH),
    }
    cluster = Cluster(broker.bootstrap_servers, tmp_path, size=WORKERS)
    with cluster.running():
        cluster.create(
            "to-delta",
            {**common, "connector.class": "kafka-to-delta", "table.path": str(delta_table)},
        )
        cluster.create(
            "to-iceberg",
            {
                **common,
                "connector.class": "kafka-to-iceberg",
                "iceberg.tables": TABLE,
                "iceberg.catalog.type": "hadoop",
                "iceberg.catalog.warehouse": str(warehouse),
            },
        )
        cluster.wait_converged(2 * TASKS_EACH)
        with SteadyProducer(broker.bootstrap_servers, topic) as producer:
            for read in (lambda: delta_rows(delta_table), lambda: iceberg_rows(warehouse, TABLE)):
                wait_until(read, 180, what="the first rows in both tables")
            for index in reversed(range(WORKERS)):
                cluster.wait_at_rest(2 * TASKS_EACH)
                restart_in_place(cluster, index, GRACE_S)
            cluster.wait_at_rest(2 * TASKS_EACH)
        produced = producer.produced
        for name, read in (
            ("delta", lambda: delta_rows(delta_table)),
            ("iceberg", lambda: iceberg_rows(warehouse, TABLE)),
        ):
            wait_until(
                read,
                180,
                what=f"all {produced} records in {name}",
                until=lambda rows: len(rows) >= produced,
            )
    # The workers are stopped: nothing more can be committed.
    problems = {
        "delta": keyed_once(delta_rows(delta_table), produced),
        "iceberg": keyed_once(iceberg_rows(warehouse, TABLE), produced),
    }
    assert problems == {"delta": None, "iceberg": None}, problems
