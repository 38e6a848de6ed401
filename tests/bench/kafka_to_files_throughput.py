"""kafka-to-files throughput: the same Spark job run by a sparkherd worker and run
directly in a plain PySpark process, with Spark's JVM Kafka source and with the
`sparkherd-kafka` Python source, side by side in one run on Apache Kafka.

The job is the connector's own task (`KafkaToFilesTask.start`) with `kafka.client` set
to `jvm` or `python`, the default transform, parquet through Spark's file sink. Every
run gets a topic of its own and the same procedure: a warm-up wave is produced and
waited for (JVM, Python workers and the first batch warm up); the query is stopped (the
worker's connector paused), the measured wave is produced as a backlog, and the clock
runs from the query's restart (the connector's resume) until the committed parquet
files hold all of it. A backlog, because on Apache Kafka the source drains faster than
one producer fills the topic: a wave produced while read would time the producer. The
worker's figures include everything it does around a running query (herder,
heartbeats, REST, claim checks, the task's restart). Target: the worker reaches at
least 0.9 of the direct rows/s with the same source.

    python -m tests.bench.kafka_to_files_throughput            # 400,000 records
    python -m tests.bench.kafka_to_files_throughput --records 2000000
    python -m tests.bench.kafka_to_files_throughput --quick    # 40,000 records
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
from aiokafka import TopicPartition

from tests.support.file_sink import committed_files
from tests.support.kafka_topics import keyed, new_topic, produce
from tests.support.polling import wait_until
from tests.support.processes import ready_worker, running_broker
from tests.support.rest_client import Api
from worker.connectors.files.kafka_to_files import KafkaToFilesTask
from worker.connectors.kafka_sink import ASSIGN_KEY
from worker.kafka.source import format_assignment
from worker.plugins.api import TaskContext
from worker.runtime.checkpoint_layout import checkpoint_dir_for
from worker.runtime.spark_packages import SPARK_KAFKA, spark_package_jars
from worker.runtime.spark_session import SparkSessionProvider

PARTITIONS = 4
CLIENTS = ("jvm", "python")
TARGET_RATIO = 0.9
PRODUCE_CHUNK = 20_000
WARM_UP = 2_000
TIMEOUT_S = 900


def committed_rows(task_dir: Path) -> int:
    return sum(pq.read_metadata(path).num_rows for path in committed_files(task_dir))


def wait_committed(task_dir: Path, records: int) -> None:
    wait_until(
        lambda: committed_rows(task_dir) >= records, TIMEOUT_S, interval_s=0.2, what="records"
    )


def produce_wave(bootstrap_servers: str, topic: str, numbers: range) -> None:
    for start in range(numbers.start, numbers.stop, PRODUCE_CHUNK):
        chunk = range(start, min(start + PRODUCE_CHUNK, numbers.stop))
        produce(bootstrap_servers, topic, keyed(chunk))


def timed_backlog(
    bootstrap_servers: str,
    topic: str,
    task_dir: Path,
    records: int,
    stop: Callable[[], None],
    start: Callable[[], None],
) -> float:
    """Seconds from `start` to the backlog of `records` being committed."""
    produce_wave(bootstrap_servers, topic, range(WARM_UP))
    wait_committed(task_dir, WARM_UP)
    stop()
    produce_wave(bootstrap_servers, topic, range(WARM_UP, WARM_UP + records))
    began = time.perf_counter()
    start()
    wait_committed(task_dir, WARM_UP + records)
    return time.perf_counter() - began


def connector_config(
    bootstrap_servers: str, topic: str, output: Path, client: str
) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-files",
        "tasks.max": "1",
        "kafka.bootstrap.servers": bootstrap_servers,
        "topics": topic,
        "output.path": str(output),
        "kafka.client": client,
        "trigger.interval.ms": "200",
    }


def through_worker(bootstrap_servers: str, root: Path, records: int, client: str) -> float:
    topic, output = new_topic(bootstrap_servers, "bench", PARTITIONS), root / "out"
    root.mkdir()
    # The direct job's Spark settings, not the test suite's start-up-friendly ones
    # (C1-only JIT and the serial collector would halve the worker's throughput).
    same_spark = ["spark.master=local[*]", "spark.driver.extraJavaOptions=-XX:+UseG1GC"]
    with ready_worker("bench", bootstrap_servers, root, same_spark) as worker:
        api = Api(worker.url)
        config = connector_config(bootstrap_servers, topic, output, client)
        api.call("PUT", "/connectors/bench/config", 201, json=config)
        api.wait_states("bench", "RUNNING", ["RUNNING"])

        def pause() -> None:
            api.call("PUT", "/connectors/bench/pause", 202)
            api.wait_states("bench", "PAUSED", ["PAUSED"])

        def resume() -> None:
            api.call("PUT", "/connectors/bench/resume", 202)

        return timed_backlog(bootstrap_servers, topic, output / "task-0", records, pause, resume)


def directly(
    spark: SparkSessionProvider, bootstrap_servers: str, root: Path, records: int, client: str
) -> float:
    topic, output = new_topic(bootstrap_servers, "bench", PARTITIONS), root / "out"
    config = connector_config(bootstrap_servers, topic, output, client)
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    task_config = {**config, ASSIGN_KEY: format_assignment(partitions)}
    checkpoint = checkpoint_dir_for(root / "checkpoints", "bench", 0)
    context = TaskContext("bench", 0, config, task_config, checkpoint)
    queries = [KafkaToFilesTask().start(spark.get(), context)]

    def stop() -> None:
        queries[-1].stop()

    def start() -> None:
        queries.append(KafkaToFilesTask().start(spark.get(), context))

    try:
        return timed_backlog(bootstrap_servers, topic, output / "task-0", records, stop, start)
    finally:
        queries[-1].stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40,000 records instead")
    parser.add_argument("--records", type=int, default=400_000, help="the backlog's size")
    args = parser.parse_args()
    records = 40_000 if args.quick else args.records
    seconds: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp, running_broker(Path(tmp)) as broker:
        for client in CLIENTS:
            seconds["worker", client] = through_worker(
                broker.bootstrap_servers, Path(tmp) / f"worker-{client}", records, client
            )
        # One SparkContext per process: the direct runs share a session that has the
        # JVM connector (resolved as a worker resolves it); `python` just does not use it.
        spark = SparkSessionProvider(
            {}, "bench-direct", lambda: spark_package_jars([SPARK_KAFKA], os.environ)
        )
        try:
            for client in CLIENTS:
                seconds["direct", client] = directly(
                    spark, broker.bootstrap_servers, Path(tmp) / f"direct-{client}", records, client
                )
        finally:
            spark.stop()
    print(f"a backlog of {records:,} records after a warm-up of {WARM_UP:,}, on Apache Kafka")
    print(f"{'':24}{'seconds':>9}{'rows/s':>12}")
    for (how, client), took in seconds.items():
        label = f"{'sparkherd worker' if how == 'worker' else 'direct PySpark job'}, {client}"
        print(f"{label:24}{took:9.1f}{records / took:12,.0f}")
    for client in CLIENTS:
        ratio = seconds["direct", client] / seconds["worker", client]
        verdict = "meets" if ratio >= TARGET_RATIO else "misses"
        print(f"worker / direct, {client:7}{ratio:9.2f}    ({verdict} the {TARGET_RATIO} target)")
    jvm_gain = seconds["worker", "python"] / seconds["worker", "jvm"]
    print(f"worker, jvm / python    {jvm_gain:9.2f}")


if __name__ == "__main__":
    main()
