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
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.runtime.checkpoint_offsets import batch_end_offsets, newest_planned_batch

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


BACKLOG = 300
BOUND = 40


def batch_sizes(checkpoint: Path) -> list[int]:
    """The offsets each planned batch of a one-source checkpoint reads, from its offsets
    log (a new topic's partitions start at 0)."""
    sizes: list[int] = []
    before: dict[tuple[str, str], int] = {}
    for batch in range(newest_planned_batch(checkpoint) + 1):
        ends = {
            (topic, part): offset
            for topic, parts in batch_end_offsets(checkpoint, batch)[0].items()
            for part, offset in parts.items()
        }
        sizes.append(sum(end - before.get(at, 0) for at, end in ends.items()))
        before = ends
    return sizes


def wait_for_records(root: Path, clients: tuple[str, ...], count: int) -> None:
    for client in clients:
        wait_until(
            partial(committed_records, root / client),
            120,
            what=f"{count} records through kafka.client={client}",
            until=lambda rows: len(rows) >= count,
        )


def test_a_backlog_is_read_in_batches_of_at_most_batch_max_records_by_either_source(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """Spark's JVM source and the Python source, each given a backlog, then killed and
    given another: no batch reads more than `batch.max.records` (plus under a record per
    partition, as Spark rounds), the first after the restart included, which the Python
    reader counts from the checkpoint's newest batch; every record once."""
    servers = broker.bootstrap_servers
    topic = new_topic(servers, "backlog", 2)
    halves = range(BACKLOG // 2), range(BACKLOG // 2, BACKLOG)
    produce(servers, topic, keyed(halves[0]))
    clients = ("jvm", "python")
    with ready_worker("bounded", servers, tmp_path) as worker:
        for client in clients:
            config = {
                "connector.class": "kafka-to-files",
                "kafka.bootstrap.servers": servers,
                "topics": topic,
                "output.path": str(tmp_path / client),
                "trigger.interval.ms": "100",
                "kafka.client": client,
                "batch.max.records": str(BOUND),
            }
            Api(worker.url).call("PUT", f"/connectors/{client}/config", 201, json=config)
        wait_for_records(tmp_path, clients, len(halves[0]))
        worker.kill()
        produce(servers, topic, keyed(halves[1]))
        worker.start().wait_ready(120)
        wait_for_records(tmp_path, clients, BACKLOG)
    for client in clients:
        rows = committed_records(tmp_path / client)
        assert len({(partition, offset) for _, partition, offset in rows}) == len(rows) == BACKLOG
        sizes = batch_sizes(checkpoint_dir_for(worker.checkpoint_root, client, 0))
        assert sum(sizes) == BACKLOG and max(sizes) <= BOUND + 1, (client, sizes)


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
