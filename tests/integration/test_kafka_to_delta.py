"""`kafka-to-delta` on one real worker, Apache Kafka and real Spark, the table read back
with delta-rs (`deltalake`), not Spark: two tasks append a 2-partition topic to one
partitioned table, every record once, while the worker is SIGKILLed mid-stream and
comes back replaying a batch the table holds (which Delta's transaction id skips);
`schema.evolution=add-columns` adds a column a changed `transform.sql` brings, `none`
fails the task naming it; the bad inputs (a plain directory as `table.path`, a
partition column the data lacks) fail their task with a message naming the problem
while the worker and a good connector beside them run on; an offsets reset writes the
records again (a new app id), never skips them. Also, in a Spark of its own:
three tasks' first batches racing to create one table, each with a column of its own,
all land once (Delta's concurrent-modification exceptions retried), and a replay of
each adds nothing."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.jvm_options import spark_driver_options
from tests.support.kafka_topics import keyed, new_topic, produce
from tests.support.lakehouse import delta_rows
from tests.support.polling import wait_until
from tests.support.rest_client import Api
from tests.support.restartable_worker import RestartableWorker, forget_newest_commit
from worker.connectors.delta.sink import DeltaSink, delta_session
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.jvm_packages import DELTA
from worker.runtime.spark_packages import spark_package_jars
from worker.runtime.spark_session import SparkSessionProvider

pytestmark = [pytest.mark.integration, pytest.mark.parallel, pytest.mark.long]

WAVE = 600
CHUNKS = 6


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestartableWorker]:
    started = RestartableWorker("delta", broker.bootstrap_servers, tmp_path_factory.mktemp("delta"))
    try:
        started.start()
        yield started
    finally:
        started.process.kill()


def wait_rows(table: Path, count: int, what: str) -> list[dict[str, Any]]:
    return wait_until(
        lambda: delta_rows(table), 180, what=what, until=lambda found: len(found) >= count
    )


def assert_once(found: list[dict[str, Any]], numbers: range) -> None:
    assert len(found) == len(numbers), "duplicates or losses"
    assert sorted(int(r["key"].removeprefix("key-")) for r in found) == list(numbers)
    assert len({(r["partition"], r["offset"]) for r in found}) == len(numbers)


def config(broker: EmbeddedBroker, topic: str, table: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-delta",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "table.path": str(table),
        "trigger.interval.ms": "500",
        **extra,
    }


def failed_trace(api: Api, name: str) -> str:
    status = wait_until(
        lambda: api.status(name),
        180,
        what=f"{name}'s task to fail",
        until=lambda s: [t["state"] for t in s["tasks"]] == ["FAILED"],
    )
    trace: str = status["tasks"][0]["trace"]
    return trace


def test_two_tasks_write_one_table_every_record_once_across_a_sigkill(
    broker: EmbeddedBroker, worker: RestartableWorker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "orders", 2)
    table = tmp_path / "orders"
    api = Api(worker.process.url, timeout_s=180)
    produce(broker.bootstrap_servers, topic, keyed(range(WAVE)))
    api.call(
        "PUT",
        "/connectors/orders/config",
        201,
        json=config(broker, topic, table, **{"tasks.max": "2", "table.partition.by": "partition"}),
    )
    assert_once(wait_rows(table, WAVE, "the first wave"), range(WAVE))

    # The second wave arrives in chunks, and the worker dies once part of it is in.
    chunk = WAVE // CHUNKS

    def trickle() -> None:
        for start in range(WAVE, 2 * WAVE, chunk):
            produce(broker.bootstrap_servers, topic, keyed(range(start, start + chunk)))
            time.sleep(0.3)

    producer = threading.Thread(target=trickle)
    producer.start()
    try:
        wait_rows(table, WAVE + 1, "part of the second wave")
    finally:
        producer.join()
    worker.process.kill()
    # Whatever moment the kill hit, each task now replays a batch the table holds.
    replayed = [
        forget_newest_commit(checkpoint_dir_for(worker.process.checkpoint_root, "orders", task))
        for task in range(2)
    ]
    produce(broker.bootstrap_servers, topic, keyed(range(2 * WAVE, 3 * WAVE)))
    api = worker.restart()
    api.wait_states("orders", "RUNNING", ["RUNNING", "RUNNING"])
    found = wait_rows(table, 3 * WAVE, "every record after the restart")
    api.call("DELETE", "/connectors/orders", 204)
    versions = [v for v in committed_transactions(table) if v[1] in replayed]

    assert_once(found, range(3 * WAVE))
    delta = DeltaTable(str(table))
    assert delta.metadata().partition_columns == ["partition"]
    assert {r["partition"] for r in found} == {0, 1}
    assert len(app_ids(table)) == 2, "one app id per task's checkpoint"
    assert len(versions) == len(set(versions)), "a replayed batch was committed again"


def test_a_batch_of_four_kafka_partitions_is_one_file_per_core(
    broker: EmbeddedBroker, worker: RestartableWorker, tmp_path: Path
) -> None:
    """The worker's Spark has two cores (`local[2]`): a batch of a 4-partition topic is
    written as two files, not one per Kafka partition (`worker.connectors.table_files`)."""
    topic = new_topic(broker.bootstrap_servers, "spread", 4)
    table = tmp_path / "spread"
    produce(broker.bootstrap_servers, topic, keyed(range(200)))
    api = Api(worker.process.url, timeout_s=180)
    api.call("PUT", "/connectors/spread/config", 201, json=config(broker, topic, table))
    assert_once(wait_rows(table, 200, "the backlog"), range(200))
    api.call("DELETE", "/connectors/spread", 204)

    first = (table / "_delta_log" / f"{0:020}.json").read_text().splitlines()
    files = [action for action in map(json.loads, first) if "add" in action]
    assert {r["partition"] for r in delta_rows(table)} == {0, 1, 2, 3}
    assert len(files) == 2


def committed_transactions(table: Path) -> list[tuple[str, int]]:
    """(app id, version) of every Delta commit that carried a transaction."""
    return [
        (action["txn"]["appId"], action["txn"]["version"])
        for path in sorted((table / "_delta_log").glob("*.json"))
        for action in map(json.loads, path.read_text().splitlines())
        if "txn" in action
    ]


def app_ids(table: Path) -> set[str]:
    """The transaction app ids in the table's log: one per checkpoint that wrote it."""
    return {app for app, _ in committed_transactions(table)}


def pause_and_set(api: Api, name: str, new_config: dict[str, str]) -> None:
    api.call("PUT", f"/connectors/{name}/pause", 202)
    api.wait_states(name, "PAUSED", ["PAUSED"])
    api.call("PUT", f"/connectors/{name}/config", 200, json=new_config)
    api.call("PUT", f"/connectors/{name}/resume", 202)


def test_add_columns_adds_a_new_column_and_none_fails_naming_it(
    broker: EmbeddedBroker, worker: RestartableWorker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "evolving", 1)
    table = tmp_path / "evolving"
    api = Api(worker.process.url, timeout_s=180)
    base = "CAST(key AS STRING) AS key, partition, offset"
    first = config(
        broker,
        topic,
        table,
        **{"schema.evolution": "add-columns", "transform.sql": f"SELECT {base} FROM source"},
    )
    produce(broker.bootstrap_servers, topic, keyed(range(100)))
    api.call("PUT", "/connectors/evolving/config", 201, json=first)
    wait_rows(table, 100, "the rows before the new column")

    sized = f"SELECT {base}, length(value) AS size FROM source"
    pause_and_set(api, "evolving", {**first, "transform.sql": sized})
    produce(broker.bootstrap_servers, topic, keyed(range(100, 200)))
    found = wait_rows(table, 200, "the rows with the new column")
    assert_once(found, range(200))
    assert [r["size"] for r in sorted(found, key=lambda r: r["offset"])] == [None] * 100 + [
        len(f"value-{n}") for n in range(100, 200)
    ]

    shouted = f"SELECT {base}, length(value) AS size, upper(key) AS shout FROM source"
    strict = {**first, "schema.evolution": "none", "transform.sql": shouted}
    pause_and_set(api, "evolving", strict)
    produce(broker.bootstrap_servers, topic, keyed(range(200, 210)))
    trace = failed_trace(api, "evolving")
    api.call("DELETE", "/connectors/evolving", 204)

    assert "new columns `shout`" in trace
    assert "schema.evolution=none" in trace
    assert "size" not in trace.split("new columns", 1)[1].split("(", 1)[0]
    assert len(delta_rows(table)) == 200
    assert "shout" not in DeltaTable(str(table)).schema().to_arrow().names


def test_bad_inputs_fail_their_task_naming_the_problem_and_the_rest_runs_on(
    broker: EmbeddedBroker, worker: RestartableWorker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "inputs", 1)
    produce(broker.bootstrap_servers, topic, keyed(range(50)))
    api = Api(worker.process.url, timeout_s=180)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.csv").write_text("a,b\n1,2\n")
    unpartitioned, good = tmp_path / "unpartitioned", tmp_path / "good"
    api.call("PUT", "/connectors/plain/config", 201, json=config(broker, topic, plain))
    api.call(
        "PUT",
        "/connectors/unpartitioned/config",
        201,
        json=config(broker, topic, unpartitioned, **{"table.partition.by": "region"}),
    )
    api.call("PUT", "/connectors/good/config", 201, json=config(broker, topic, good))

    plain_trace = failed_trace(api, "plain")
    partition_trace = failed_trace(api, "unpartitioned")
    good_rows = wait_rows(good, 50, "the good connector's rows")
    api.wait_states("good", "RUNNING", ["RUNNING"])
    health = api.call("GET", "/health", 200)
    for name in ("plain", "unpartitioned", "good"):
        api.call("DELETE", f"/connectors/{name}", 204)

    assert f"table.path {plain} is not a Delta table" in plain_trace
    assert sorted(p.name for p in plain.iterdir()) == ["notes.csv"], "wrote into it"
    assert "table.partition.by names `region`" in partition_trace
    assert not (unpartitioned / "_delta_log").exists()
    assert_once(good_rows, range(50))
    assert health.status_code == 200


def race_first_batches(table: Path, root: Path) -> list[str]:
    """Three sinks' first batches, each with a column of its own, started at once on one
    new table, then each replayed; what any of them raised. Run in a process of its own:
    a process keeps the JVM, and the jars, of the first SparkContext it started, and
    another module's in-process Spark may have come first."""
    provider = SparkSessionProvider(
        {
            "spark.master": "local[2]",
            "spark.driver.memory": "512m",
            "spark.driver.extraJavaOptions": spark_driver_options(),
        },
        "delta-race",
        lambda: spark_package_jars([DELTA], os.environ),
    )
    tasks = range(3)
    errors: list[str] = []
    try:
        spark = provider.get().newSession()
        batches = [
            spark.range(i * 10, (i + 1) * 10).selectExpr("id", "id % 2 AS part", f"id AS n{i}")
            for i in tasks
        ]
        sinks = []
        for i in tasks:
            checkpoint = root / f"checkpoint-{i}"
            checkpoint.mkdir()
            (checkpoint / "metadata").write_text(json.dumps({"id": f"query-{i}"}))
            session = delta_session(batches[i])
            sinks.append(DeltaSink(session, str(table), ["part"], "add-columns", checkpoint))
        start = threading.Barrier(len(tasks))

        def first_batch(i: int) -> None:
            start.wait()
            try:
                sinks[i].write(batches[i], 0)
            except Exception as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=first_batch, args=(i,)) for i in tasks]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for i in tasks:
            sinks[i].write(batches[i], 0)
    finally:
        provider.stop()
    return errors


def test_racing_first_batches_create_the_table_and_merge_their_columns_once(
    tmp_path: Path,
) -> None:
    table = tmp_path / "race"
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
        errors = child.submit(race_first_batches, table, tmp_path).result(timeout=300)

    assert errors == []
    found = delta_rows(table)
    assert sorted(r["id"] for r in found) == list(range(30))
    assert all(r[f"n{r['id'] // 10}"] == r["id"] for r in found)
    assert DeltaTable(str(table)).metadata().partition_columns == ["part"]


def test_resetting_offsets_writes_again_under_a_new_app_id(
    tansu_broker: EmbeddedBroker, worker: RestartableWorker, tmp_path: Path
) -> None:
    """A reset removes the checkpoint, and with it the query id the table knows: the
    records are read and written again, not skipped as batches already committed. The
    records are on the default broker (Tansu), read by the Python Kafka source: Spark's
    JVM source takes Tansu's ListOffsets answer, short of a partition's end."""
    broker = tansu_broker
    topic = new_topic(broker.bootstrap_servers, "again", 1)
    table = tmp_path / "again"
    api = Api(worker.process.url, timeout_s=180)
    produce(broker.bootstrap_servers, topic, keyed(range(50)))
    python_client = {"kafka.client": "python"}
    api.call(
        "PUT", "/connectors/again/config", 201, json=config(broker, topic, table, **python_client)
    )
    wait_rows(table, 50, "the first pass")
    api.call("PUT", "/connectors/again/stop", 204)
    api.once_tasks_stopped("DELETE", "/connectors/again/offsets")
    api.call("PUT", "/connectors/again/resume", 202)
    found = wait_rows(table, 100, "the second pass")
    api.call("DELETE", "/connectors/again", 204)

    assert sorted(r["offset"] for r in found) == sorted([*range(50), *range(50)])
    assert len(app_ids(table)) == 2
