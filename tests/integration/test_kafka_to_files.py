"""`kafka-to-files` on real workers, a real broker and real Spark: every record of a
keyed topic lands in the output once, while a worker is killed and comes back."""

from __future__ import annotations

import csv
import signal
from functools import partial
from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster
from tests.support.file_sink import committed_files, committed_records
from tests.support.kafka_topics import keyed, new_topic, produce
from tests.support.polling import wait_until
from tests.support.processes import ready_worker
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]
"""Both tests assert what lands, never how fast: a neighbour's load slows them, no more."""

RECORDS = 10_000
PARTITIONS = 4
WAVES = 4


def test_every_record_lands_once_while_a_worker_is_killed_and_restarted(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "orders", PARTITIONS)
    output = tmp_path / "out"
    waves = [range(w * RECORDS // WAVES, (w + 1) * RECORDS // WAVES) for w in range(WAVES)]
    cluster = Cluster(
        broker.bootstrap_servers,
        tmp_path,
        size=2,
        settings=["scheduled.rebalance.max.delay.ms=3000"],
    )
    with cluster.running():
        produce(broker.bootstrap_servers, topic, keyed(waves[0]))
        cluster.create(
            "orders",
            {
                "connector.class": "kafka-to-files",
                "tasks.max": str(PARTITIONS),
                "kafka.bootstrap.servers": broker.bootstrap_servers,
                "topics": topic,
                "output.path": str(output),
                "trigger.interval.ms": "500",
                # Spark's JVM source, which the worker fetched from Maven Central itself.
                "kafka.client": "jvm",
            },
        )
        cluster.wait_converged(PARTITIONS)
        wait_until(
            lambda: len(committed_records(output)),
            120,
            what="the first wave",
            until=lambda count: count >= len(waves[0]),
        )

        produce(broker.bootstrap_servers, topic, keyed(waves[1]))
        cluster.workers[1].signal(signal.SIGKILL)
        produce(broker.bootstrap_servers, topic, keyed(waves[2]))
        cluster.wait_converged(PARTITIONS)

        cluster.restart(1).wait_ready(120)
        produce(broker.bootstrap_servers, topic, keyed(waves[3]))
        views = cluster.wait_converged(PARTITIONS)
        assert len({v.worker_id for v in views}) == 2, "the restarted worker got no task back"
        wait_until(
            lambda: len(committed_records(output)),
            180,
            what="every record",
            until=lambda count: count >= RECORDS,
        )

    rows = committed_records(output)
    assert len(rows) == RECORDS, "duplicates"
    assert sorted(key for key, _, _ in rows) == sorted(f"key-{n}" for n in range(RECORDS))
    per_partition = sorted((p, o) for _, p, o in rows)
    assert len(set(per_partition)) == RECORDS


def csv_rows(task_dir: Path) -> list[dict[str, str]]:
    return [row for path in committed_files(task_dir) for row in csv.DictReader(path.open())]


def test_transform_sql_shapes_each_batch_written_as_csv(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "shouts", 1)
    produce(broker.bootstrap_servers, topic, keyed(range(100)))
    output = tmp_path / "out"
    with ready_worker("sql", broker.bootstrap_servers, tmp_path) as worker:
        api = Api(worker.url)
        config = {
            "connector.class": "kafka-to-files",
            "kafka.bootstrap.servers": broker.bootstrap_servers,
            "topics": topic,
            "output.path": str(output),
            "output.format": "csv",
            "kafka.client": "python",
            "transform.sql": "SELECT upper(CAST(value AS STRING)) AS shout, offset "
            "FROM source WHERE offset % 2 = 0",
        }
        api.call("PUT", "/connectors/shouts/config", 201, json=config)
        api.wait_states("shouts", "RUNNING", ["RUNNING"])
        rows = wait_until(
            partial(csv_rows, output / "task-0"),
            120,
            what="the transformed rows",
            until=lambda found: len(found) >= 50,
        )
    assert sorted(rows, key=lambda r: int(r["offset"])) == [
        {"shout": f"VALUE-{n}", "offset": str(n)} for n in range(0, 100, 2)
    ]
