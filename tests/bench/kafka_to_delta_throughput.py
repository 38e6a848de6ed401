"""kafka-to-delta throughput: the same Spark job run by a sparkherd worker and run
directly in a plain PySpark process, on Apache Kafka, taking turns.

The job is the connector's own task (`KafkaToDeltaTask.start`): Spark's JVM Kafka
source, the default transform, one task over a 4-partition topic appending to a Delta
table through Spark's Delta writer, each batch one commit under its transaction id.
Every run gets a topic and a table of its own and the same procedure: a warm-up wave is
produced and waited for (JVM, Python workers, the table's creation); the query is
stopped (the worker's connector paused), the measured wave is produced as a backlog,
and the clock runs from the query's restart (the connector's resume) until the table's
newest version holds all of it (counted from its add actions with delta-rs). The
worker's figures include everything it does around a running query (herder,
heartbeats, REST, claim checks, the task's restart). One worker and one direct session
live through all runs; the two sides alternate (the worker first in even repeats), so
a slow spell of the shared machine does not land on one side only, and each repeat's
pair is also compared on its own. Target: the worker's median rows/s at least 0.95 of
the direct job's.

    python -m tests.bench.kafka_to_delta_throughput            # 200,000 records, 3 repeats
    python -m tests.bench.kafka_to_delta_throughput --records 1000000 --repeats 5
    python -m tests.bench.kafka_to_delta_throughput --quick    # 20,000 records, 3 repeats
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from aiokafka import TopicPartition
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from tests.bench.kafka_to_files_throughput import produce_wave
from tests.bench.result_file import ResultFile, add_json_option
from tests.support.kafka_topics import new_topic
from tests.support.polling import wait_until
from tests.support.processes import ready_worker, running_broker
from tests.support.rest_client import Api
from worker.connectors.delta.kafka_to_delta import KafkaToDeltaTask
from worker.connectors.kafka_sink import ASSIGN_KEY
from worker.kafka.source import format_assignment
from worker.plugins.api import TaskContext
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.jvm_packages import DELTA, SPARK_KAFKA
from worker.runtime.spark_packages import spark_package_jars
from worker.runtime.spark_session import SparkSessionProvider

PARTITIONS = 4
TARGET_RATIO = 0.95
WARM_UP = 2_000
TIMEOUT_S = 900
SIDES = ("worker", "direct")

Run = Callable[[str, Path, int], float]
"""One measured run: (name, its own directory, records) -> seconds."""


def table_rows(table: Path) -> int:
    try:
        actions = DeltaTable(str(table)).get_add_actions(flatten=True)
    except TableNotFoundError:
        return 0
    return sum(n or 0 for n in actions.column("num_records").to_pylist())


def timed_backlog(
    bootstrap_servers: str,
    topic: str,
    table: Path,
    records: int,
    stop: Callable[[], None],
    start: Callable[[], None],
) -> float:
    """Seconds from `start` to the table holding the backlog of `records`."""

    def wait_rows(count: int) -> None:
        wait_until(lambda: table_rows(table) >= count, TIMEOUT_S, interval_s=0.2, what="records")

    produce_wave(bootstrap_servers, topic, range(WARM_UP))
    wait_rows(WARM_UP)
    stop()
    produce_wave(bootstrap_servers, topic, range(WARM_UP, WARM_UP + records))
    began = time.perf_counter()
    start()
    wait_rows(WARM_UP + records)
    return time.perf_counter() - began


def connector_config(bootstrap_servers: str, topic: str, table: Path) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-delta",
        "tasks.max": "1",
        "kafka.bootstrap.servers": bootstrap_servers,
        "topics": topic,
        "table.path": str(table),
        "kafka.client": "jvm",
        "trigger.interval.ms": "200",
    }


@contextmanager
def through_worker(bootstrap_servers: str, root: Path) -> Iterator[Run]:
    """Runs as connectors of one worker, each paused and resumed around its backlog."""
    root.mkdir()
    # The direct job's Spark settings, not the test suite's start-up-friendly ones
    # (C1-only JIT and the serial collector would halve the worker's throughput).
    same_spark = ["spark.master=local[*]", "spark.driver.extraJavaOptions=-XX:+UseG1GC"]
    with ready_worker("bench", bootstrap_servers, root, same_spark) as worker:
        api = Api(worker.url, timeout_s=TIMEOUT_S)

        def run(name: str, directory: Path, records: int) -> float:
            topic, table = new_topic(bootstrap_servers, name, PARTITIONS), directory / "table"
            config = connector_config(bootstrap_servers, topic, table)
            api.call("PUT", f"/connectors/{name}/config", 201, json=config)

            def pause() -> None:
                api.call("PUT", f"/connectors/{name}/pause", 202)
                api.wait_states(name, "PAUSED", ["PAUSED"])

            def resume() -> None:
                api.call("PUT", f"/connectors/{name}/resume", 202)

            try:
                return timed_backlog(bootstrap_servers, topic, table, records, pause, resume)
            finally:
                api.call("DELETE", f"/connectors/{name}", 204)

        yield run


@contextmanager
def directly(bootstrap_servers: str) -> Iterator[Run]:
    """Runs as the task's query in this process's own SparkSession, with the packages a
    worker resolves (Spark's Kafka connector, Delta)."""
    spark = SparkSessionProvider(
        {}, "bench-direct", lambda: spark_package_jars([SPARK_KAFKA, DELTA], os.environ)
    )

    def run(name: str, directory: Path, records: int) -> float:
        topic, table = new_topic(bootstrap_servers, name, PARTITIONS), directory / "table"
        config = connector_config(bootstrap_servers, topic, table)
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        task_config = {**config, ASSIGN_KEY: format_assignment(partitions)}
        checkpoint = checkpoint_dir_for(directory / "checkpoints", name, 0)
        context = TaskContext(name, 0, config, task_config, checkpoint)
        queries = [KafkaToDeltaTask().start(spark.get(), context)]

        def stop() -> None:
            queries[-1].stop()

        def start() -> None:
            queries.append(KafkaToDeltaTask().start(spark.get(), context))

        try:
            return timed_backlog(bootstrap_servers, topic, table, records, stop, start)
        finally:
            queries[-1].stop()

    try:
        yield run
    finally:
        spark.stop()


def summary(label: str, seconds: list[float], records: int) -> str:
    rates = sorted(records / s for s in seconds)
    return (
        f"{label:20}{statistics.median(seconds):9.1f}{statistics.median(rates):12,.0f}"
        f"    {rates[0]:,.0f} - {rates[-1]:,.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 records instead")
    parser.add_argument("--records", type=int, default=200_000, help="the backlog's size")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side")
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    records = 20_000 if args.quick else args.records
    seconds: dict[str, list[float]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory() as tmp, running_broker(Path(tmp)) as broker:
        servers = broker.bootstrap_servers
        with through_worker(servers, Path(tmp) / "worker") as worker, directly(servers) as direct:
            runs = {"worker": worker, "direct": direct}
            for repeat in range(args.repeats):
                order = SIDES if repeat % 2 == 0 else SIDES[::-1]
                for side in order:
                    name = f"bench-{side}-{repeat}"
                    directory = Path(tmp) / name
                    directory.mkdir()
                    took = runs[side](name, directory, records)
                    seconds[side].append(took)
                    print(f"run {repeat} {side:7}{took:9.1f} s{records / took:12,.0f} rows/s")
    print(
        f"a backlog of {records:,} records after a warm-up of {WARM_UP:,}, on Apache Kafka, "
        f"{args.repeats} runs each"
    )
    print(f"{'median of':20}{'seconds':>9}{'rows/s':>12}    rows/s range")
    print(summary("sparkherd worker", seconds["worker"], records))
    print(summary("direct PySpark job", seconds["direct"], records))
    ratio = statistics.median(seconds["direct"]) / statistics.median(seconds["worker"])
    verdict = "meets" if ratio >= TARGET_RATIO else "misses"
    print(f"worker / direct     {ratio:9.2f}    ({verdict} the {TARGET_RATIO} target)")
    # Each repeat's two runs follow each other: their ratio is the least disturbed by a
    # slow spell of the shared machine, which moves both medians.
    paired = sorted(d / w for d, w in zip(seconds["direct"], seconds["worker"], strict=True))
    print(
        f"worker / direct, per repeat: median {statistics.median(paired):.2f}, "
        f"range {paired[0]:.2f} - {paired[-1]:.2f}"
    )
    result.write(
        {
            "seconds": seconds,
            "worker_over_direct": ratio,
            "meets_target": ratio >= TARGET_RATIO,
            "worker_over_direct_per_repeat": paired,
        },
        {"records": records, "warm_up": WARM_UP, "target_ratio": TARGET_RATIO},
    )


if __name__ == "__main__":
    main()
