"""kafka-to-files throughput: the same Spark job run by a sparkherd worker and run
directly in a plain PySpark process, in one run.

The job is the connector's own task (`KafkaToFilesTask.start`): the `sparkherd-kafka`
Python source (no JVM Kafka connector here), the default transform, parquet through
Spark's file sink. Each side gets a topic of its own and the same procedure: a warm-up
wave is produced and waited for (JVM, Python workers and the first batch warm up), then
the clock runs while the measured wave is produced and until the committed parquet
files hold all of it. The worker's figure thus includes everything it does around a
running query (herder, heartbeats, REST, claim checks). Target: the worker reaches at
least 0.9 of the direct rows/s.

    python tests/bench/kafka_to_files_throughput.py            # 400,000 records
    python tests/bench/kafka_to_files_throughput.py --quick    # 40,000 records
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyarrow.parquet as pq
from aiokafka import TopicPartition

from tests.support.file_sink import committed_files
from tests.support.kafka_topics import keyed, new_topic, produce
from tests.support.processes import ready_worker, running_broker, wait_until
from tests.support.rest_client import Api
from worker.connectors.kafka_to_files import ASSIGN_KEY, KafkaToFilesTask
from worker.kafka.source import format_assignment
from worker.plugins import TaskContext, checkpoint_dir_for
from worker.spark_session import SparkSessionProvider

PARTITIONS = 4
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


def timed_wave(bootstrap_servers: str, topic: str, task_dir: Path, records: int) -> float:
    """Seconds from the warm-up wave being committed to the measured wave being committed."""
    produce_wave(bootstrap_servers, topic, range(WARM_UP))
    wait_committed(task_dir, WARM_UP)
    began = time.perf_counter()
    produce_wave(bootstrap_servers, topic, range(WARM_UP, WARM_UP + records))
    wait_committed(task_dir, WARM_UP + records)
    return time.perf_counter() - began


def connector_config(bootstrap_servers: str, topic: str, output: Path) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-files",
        "tasks.max": "1",
        "kafka.bootstrap.servers": bootstrap_servers,
        "topics": topic,
        "output.path": str(output),
        "kafka.client": "python",
        "trigger.interval.ms": "200",
    }


def through_worker(bootstrap_servers: str, root: Path, records: int) -> float:
    topic, output = new_topic(bootstrap_servers, "bench", PARTITIONS), root / "worker-out"
    (root / "worker").mkdir()
    with ready_worker("bench", bootstrap_servers, root / "worker") as worker:
        api = Api(worker.url)
        config = connector_config(bootstrap_servers, topic, output)
        api.call("PUT", "/connectors/bench/config", 201, json=config)
        api.wait_states("bench", "RUNNING", ["RUNNING"])
        return timed_wave(bootstrap_servers, topic, output / "task-0", records)


def directly(bootstrap_servers: str, root: Path, records: int) -> float:
    topic, output = new_topic(bootstrap_servers, "bench", PARTITIONS), root / "direct-out"
    config = connector_config(bootstrap_servers, topic, output)
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    task_config = {**config, ASSIGN_KEY: format_assignment(partitions)}
    checkpoint = checkpoint_dir_for(root / "direct", "bench", 0)
    spark = SparkSessionProvider({}, "bench-direct")
    try:
        context = TaskContext("bench", 0, config, task_config, checkpoint)
        query = KafkaToFilesTask().start(spark.get(), context)
        try:
            return timed_wave(bootstrap_servers, topic, output / "task-0", records)
        finally:
            query.stop()
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40,000 records instead")
    records = 40_000 if parser.parse_args().quick else 400_000
    with tempfile.TemporaryDirectory() as tmp, running_broker(Path(tmp)) as broker:
        worker_s = through_worker(broker.bootstrap_servers, Path(tmp), records)
        direct_s = directly(broker.bootstrap_servers, Path(tmp), records)
    worker_rate, direct_rate = records / worker_s, records / direct_s
    print(f"{records:,} records after a warm-up of {WARM_UP:,}, produced while read")
    print(f"direct PySpark job   {direct_s:7.1f} s   {direct_rate:10,.0f} rows/s")
    print(f"sparkherd worker     {worker_s:7.1f} s   {worker_rate:10,.0f} rows/s")
    ratio = worker_rate / direct_rate
    verdict = "meets" if ratio >= TARGET_RATIO else "misses"
    print(f"worker / direct      {ratio:7.2f}    ({verdict} the {TARGET_RATIO} target)")


if __name__ == "__main__":
    main()
