"""kafka-to-files throughput: the same Spark job run by a sparkherd worker and run
directly in a plain PySpark process, with Spark's JVM Kafka source and with the
`sparkherd-kafka` Python source, alternated and repeated on Apache Kafka.

The job is the connector's own task (`KafkaToFilesTask.start`) with `kafka.client` set
to `jvm` or `python`, the default transform, parquet through Spark's file sink. One
worker process serves every worker run and one plain PySpark process (this module with
`--serve-direct`, driven over its stdin) every direct run, both started before the first
run, with the same Spark settings; this process only produces, polls and times. Runs
alternate (worker, direct, then direct, worker, ...), so a load that changes during the
bench biases neither side, and each side's median and range are printed with the load.
Each side and client first has an untimed run, so that neither side's figures carry its
JVM's warm-up.

Every run gets a topic and a checkpoint of its own and the same procedure: a warm-up
wave is produced and waited for (the first batch warms up); the query is stopped (the
worker's connector paused), the measured wave is produced as a backlog, and the clock
runs from the query's restart (the connector's resume) until the committed parquet
files hold all of it. A backlog, because on Apache Kafka the source drains faster than
one producer fills the topic: a wave produced while read would time the producer. Each
run's time is split at the restarted query's first planned batch (its offsets file):
the restart (for the worker also the REST call, the herder and the task's claim) and
the drain. Target: the worker reaches at least 0.95 of the direct rows/s with the JVM
source.

    python -m tests.bench.kafka_to_files_throughput                    # 400,000 records x 3
    python -m tests.bench.kafka_to_files_throughput --repeat 5 --records 2000000
    python -m tests.bench.kafka_to_files_throughput --quick            # 100,000, jvm only
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
from aiokafka import TopicPartition

from tests.bench.result_file import ResultFile, add_json_option
from tests.support.file_sink import committed_files
from tests.support.kafka_topics import keyed, new_topic, produce
from tests.support.polling import wait_until
from tests.support.processes import process_tree, ready_worker, running_broker
from tests.support.rest_client import Api
from worker.connectors.files.kafka_to_files import KafkaToFilesTask
from worker.connectors.kafka_sink import ASSIGN_KEY
from worker.kafka.client import Outgoing
from worker.kafka.source import format_assignment
from worker.plugins.api import TaskContext
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.jvm_packages import SPARK_KAFKA
from worker.runtime.spark_packages import spark_package_jars
from worker.runtime.spark_session import SparkSessionProvider

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

PARTITIONS = 4
CLIENTS = ("jvm", "python")
SIDES = ("worker", "direct")
TARGET_RATIO = 0.95
PRODUCE_CHUNK = 20_000
WARM_UP = 2_000
WARM_UP_RUN = 100_000
"""Records of each side's first, untimed run per client: a fresh JVM compiles the
reader's and the parquet writer's hot paths during it (a worker's first 400,000-record
run took 9.3 s, its next ones 3.0)."""
TIMEOUT_S = 900
SAME_SPARK = {"spark.master": "local[*]", "spark.driver.extraJavaOptions": "-XX:+UseG1GC"}
"""Both sides' Spark settings beyond the worker's defaults: the direct job's, not the
test suite's start-up-friendly ones (C1-only JIT and the serial collector would halve
the worker's throughput)."""


@dataclass(frozen=True)
class Run:
    side: str
    client: str
    records: int
    seconds: float
    """From the restart to the backlog committed."""
    restart_s: float
    """From the restart to the restarted query's first planned batch."""
    batches: int
    load: float
    cpu: Cpu
    """What the side's processes spent from the restart to the backlog committed."""

    @property
    def rows_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def drain_rows_per_s(self) -> float:
        return self.records / max(self.seconds - self.restart_s, 1e-3)

    def figures(self) -> dict[str, Any]:
        rates = {"rows_per_s": self.rows_per_s, "drain_rows_per_s": self.drain_rows_per_s}
        return {**asdict(self), **rates}


@dataclass(frozen=True)
class Cpu:
    """CPU seconds of a side's processes: its Python process (for the worker also the
    herder, REST and the progress monitor) and the processes it started (Spark's JVM)."""

    python_s: float
    jvm_s: float
    jvm_waited_s: float
    """How long the JVM's threads were ready to run but waited for a CPU."""

    @property
    def total_s(self) -> float:
        """What a run cost whatever the load: the wall clock waits for neighbours too."""
        return self.python_s + self.jvm_s

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(
            self.python_s - other.python_s,
            self.jvm_s - other.jvm_s,
            self.jvm_waited_s - other.jvm_waited_s,
        )


def cpu_of(pid: int) -> Cpu:
    """User and system CPU of `pid` and, apart, of every process under it."""
    ticks = os.sysconf("SC_CLK_TCK")

    def spent(one: int) -> float:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / ticks

    def waited(one: int) -> float:
        total = 0
        for thread in Path(f"/proc/{one}/task").glob("*/schedstat"):
            with contextlib.suppress(OSError, IndexError):
                total += int(thread.read_text().split()[1])
        return total / 1e9

    started = process_tree(pid) - {pid}
    return Cpu(spent(pid), sum(spent(one) for one in started), sum(waited(one) for one in started))


class CommittedRows:
    """Rows in a file sink's committed files, each file's footer read once."""

    def __init__(self, task_dir: Path) -> None:
        self._task_dir = task_dir
        self._rows: dict[Path, int] = {}

    def __call__(self) -> int:
        for path in committed_files(self._task_dir):
            if path not in self._rows:
                self._rows[path] = pq.read_metadata(path).num_rows
        return sum(self._rows.values())


def wait_committed(task_dir: Path, records: int) -> None:
    rows = CommittedRows(task_dir)
    wait_until(lambda: rows() >= records, TIMEOUT_S, interval_s=0.1, what="records")


Encode = Callable[[range], list[Outgoing]]
"""The records numbered in a range, as produced (`keyed`: key-n, value-n)."""


def produce_wave(
    bootstrap_servers: str, topic: str, numbers: range, encode: Encode = keyed
) -> None:
    for start in range(numbers.start, numbers.stop, PRODUCE_CHUNK):
        chunk = range(start, min(start + PRODUCE_CHUNK, numbers.stop))
        produce(bootstrap_servers, topic, encode(chunk))


def batch_ids(checkpoint: Path, log: str) -> list[int]:
    names = (p.name for p in (checkpoint / log).iterdir()) if (checkpoint / log).is_dir() else ()
    return sorted(int(name) for name in names if name.isdigit())


@dataclass(frozen=True)
class Job:
    """One run's job on one side: where its files go, and how to stop and restart it."""

    output: Path
    checkpoint: Path
    stop: Callable[[], None]
    start: Callable[[], None]
    pid: int
    """The side's Python process."""


def timed_backlog(
    bootstrap_servers: str,
    topic: str,
    job: Job,
    side: str,
    client: str,
    records: int,
    encode: Encode = keyed,
    warm_up_produced: bool = False,
) -> Run:
    """The run: warm-up, stop, backlog, then the timed restart."""
    task_dir = job.output / "task-0"
    if not warm_up_produced:
        produce_wave(bootstrap_servers, topic, range(WARM_UP), encode)
    wait_committed(task_dir, WARM_UP)
    job.stop()
    produce_wave(bootstrap_servers, topic, range(WARM_UP, WARM_UP + records), encode)
    planned_before = max(batch_ids(job.checkpoint, "offsets"), default=-1)
    cpu_before, began_wall, began = cpu_of(job.pid), time.time(), time.perf_counter()
    job.start()
    wait_committed(task_dir, WARM_UP + records)
    seconds, cpu = time.perf_counter() - began, cpu_of(job.pid) - cpu_before
    planned = [b for b in batch_ids(job.checkpoint, "offsets") if b > planned_before]
    first_planned = (job.checkpoint / "offsets" / str(planned[0])).stat().st_mtime
    restart_s = first_planned - began_wall
    return Run(side, client, records, seconds, restart_s, len(planned), load(), cpu)


def load() -> float:
    return os.getloadavg()[0]


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


Side = Callable[[str, Path, int, str], Run]
"""One run on a side: (bootstrap servers, the run's directory, records, client)."""


ConfigOf = Callable[[str, str, Path, str], dict[str, str]]
"""A run's connector config: (bootstrap servers, topic, output path, client)."""


@contextmanager
def worker_side(
    bootstrap_servers: str,
    root: Path,
    settings: Sequence[str],
    config_of: ConfigOf = connector_config,
    encode: Encode = keyed,
    wave_before_start: bool = False,
) -> Iterator[Side]:
    """One worker for every worker run: each run a connector of its own, deleted after.
    `config_of` and `encode` let another bench time other configs and records;
    `wave_before_start` produces the warm-up wave before the connector is created, for a
    converter that infers the records' type from the first of them (JSON)."""
    root.mkdir()
    spark = [f"{key}={value}" for key, value in SAME_SPARK.items()]
    with ready_worker("bench", bootstrap_servers, root, [*spark, *settings]) as worker:
        api = Api(worker.url)
        assert worker.process is not None
        worker_pid = worker.process.pid

        def run(servers: str, run_dir: Path, records: int, client: str) -> Run:
            name, topic = run_dir.name, new_topic(servers, "bench", PARTITIONS)
            config = config_of(servers, topic, run_dir / "out", client)
            if wave_before_start:
                produce_wave(servers, topic, range(WARM_UP), encode)
            api.call("PUT", f"/connectors/{name}/config", 201, json=config)
            api.wait_states(name, "RUNNING", ["RUNNING"])

            def pause() -> None:
                api.call("PUT", f"/connectors/{name}/pause", 202)
                api.wait_states(name, "PAUSED", ["PAUSED"])

            def resume() -> None:
                api.call("PUT", f"/connectors/{name}/resume", 202)

            checkpoint = checkpoint_dir_for(root / "checkpoints", name, 0)
            job = Job(run_dir / "out", checkpoint, pause, resume, worker_pid)
            try:
                return timed_backlog(
                    servers, topic, job, "worker", client, records, encode, wave_before_start
                )
            finally:
                api.call("DELETE", f"/connectors/{name}", 204)

        yield run


class DirectJobs:
    """The direct job's session and its queries, one run at a time: in this process or,
    driven line by line over stdin (`--serve-direct`), in a plain PySpark process of its
    own, as a job run directly would be."""

    def __init__(self, settings: dict[str, str]) -> None:
        self._spark = SparkSessionProvider(
            {**SAME_SPARK, **settings},
            "bench-direct",
            lambda: spark_package_jars([SPARK_KAFKA], os.environ),
        )
        self._spark.get()
        self._context: TaskContext | None = None
        self._query: StreamingQuery | None = None
        self.pid = os.getpid()

    def open(self, servers: str, topic: str, run_dir: str, client: str) -> None:
        config = connector_config(servers, topic, Path(run_dir) / "out", client)
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        task_config = {**config, ASSIGN_KEY: format_assignment(partitions)}
        checkpoint = direct_checkpoint(Path(run_dir))
        self._context = TaskContext("bench", 0, config, task_config, checkpoint)
        self.start()

    def start(self) -> None:
        assert self._context is not None
        self._query = KafkaToFilesTask().start(self._spark.get(), self._context)

    def stop(self) -> None:
        if self._query is not None:
            self._query.stop()
            self._query = None

    def close(self) -> None:
        self.stop()
        self._spark.stop()


def direct_checkpoint(run_dir: Path) -> Path:
    return checkpoint_dir_for(run_dir / "checkpoints", "bench", 0)


def serve_direct(settings: dict[str, str]) -> None:
    """`--serve-direct`: one JSON command a line on stdin, `ok` a line on stdout."""
    jobs = DirectJobs(settings)
    print("ok", flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        getattr(jobs, op)(**command)
        print("ok", flush=True)
        if op == "close":
            return


class DirectProcess:
    """`DirectJobs` in a child process: the same calls, over its stdin and stdout."""

    def __init__(self, settings: dict[str, str], log: Path) -> None:
        args = [sys.executable, "-m", __spec__.name if __spec__ else "", "--serve-direct"]
        args += [f"--spark={key}={value}" for key, value in settings.items()]
        with log.open("ab") as stderr:
            self._child = subprocess.Popen(
                args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True
            )
        self.pid = self._child.pid
        self._answer()

    def _answer(self) -> None:
        assert self._child.stdout is not None
        line = self._child.stdout.readline()
        if line.strip() != "ok":
            raise RuntimeError(f"the direct job's process answered {line!r}: see its log")

    def _send(self, op: str, **arguments: str) -> None:
        assert self._child.stdin is not None
        self._child.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self._child.stdin.flush()
        self._answer()

    def open(self, servers: str, topic: str, run_dir: str, client: str) -> None:
        self._send("open", servers=servers, topic=topic, run_dir=run_dir, client=client)

    def start(self) -> None:
        self._send("start")

    def stop(self) -> None:
        self._send("stop")

    def close(self) -> None:
        try:
            self._send("close")
            self._child.wait(60)
        finally:
            self._child.kill()


@contextmanager
def direct_side(settings: dict[str, str], in_process: bool, log: Path) -> Iterator[Side]:
    """One session for every direct run, with the JVM connector resolved as a worker
    resolves it (`python` runs just do not use it): in a process of its own unless
    `in_process`, where this process's own polling shares the job's interpreter."""
    jobs = DirectJobs(settings) if in_process else DirectProcess(settings, log)

    def run(servers: str, run_dir: Path, records: int, client: str) -> Run:
        topic = new_topic(servers, "bench", PARTITIONS)
        jobs.open(servers, topic, str(run_dir), client)
        try:
            checkpoint = direct_checkpoint(run_dir)
            job = Job(run_dir / "out", checkpoint, jobs.stop, jobs.start, jobs.pid)
            return timed_backlog(servers, topic, job, "direct", client, records)
        finally:
            jobs.stop()

    try:
        yield run
    finally:
        jobs.close()


def schedule(repeat: int, clients: Sequence[str]) -> list[tuple[str, str]]:
    """(side, client) in run order: each round alternates which side goes first."""
    order: list[tuple[str, str]] = []
    for round_ in range(repeat):
        sides = SIDES if round_ % 2 == 0 else SIDES[::-1]
        order += [(side, client) for client in clients for side in sides]
    return order


def spread(values: Sequence[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}-{max(values):{fmt}}]"


COLUMNS: dict[str, tuple[Callable[[Run], float], str, int]] = {
    "rows/s": (lambda r: r.rows_per_s, ",.0f", 26),
    "restart s": (lambda r: r.restart_s, ".2f", 20),
    "drain rows/s": (lambda r: r.drain_rows_per_s, ",.0f", 28),
    "Python CPU s": (lambda r: r.cpu.python_s, ".2f", 20),
    "JVM CPU s": (lambda r: r.cpu.jvm_s, ".2f", 22),
    "JVM waited s": (lambda r: r.cpu.jvm_waited_s, ".2f", 22),
    "load": (lambda r: r.load, ".1f", 17),
}
"""What the report shows per side: how a run's figure is read, formatted and how wide."""
TABLES = (
    ("rows/s", "restart s", "drain rows/s"),
    ("Python CPU s", "JVM CPU s", "JVM waited s", "load"),
)


def report(runs: Sequence[Run], clients: Sequence[str]) -> dict[str, dict[str, float]]:
    """Prints the tables; returns worker / direct per client (rows/s, drain only, CPU)."""
    ratios: dict[str, dict[str, float]] = {}
    print(f"\n{runs[0].records:,} records a run after a warm-up of {WARM_UP:,}, on Apache Kafka")
    print("median [range] per side; restart: to the first planned batch; drain: after it;")
    print("CPU: the side's processes' user + system seconds from the restart to the end;")
    print("waited: the JVM threads' time ready to run but without a CPU (the machine's load)")
    for table in TABLES:
        print("\n" + f"{'':24}" + "".join(f"{name:>{COLUMNS[name][2]}}" for name in table))
        for client, side in itertools.product(clients, SIDES):
            mine = [r for r in runs if (r.side, r.client) == (side, client)]
            label = f"{'sparkherd worker' if side == 'worker' else 'direct job'}, {client}"
            cells = (
                f"{spread([read(r) for r in mine], fmt):>{width}}"
                for read, fmt, width in (COLUMNS[name] for name in table)
            )
            print(f"{label:24}" + "".join(cells))
    print()
    for client in clients:
        worker, direct = (
            [r for r in runs if (r.side, r.client) == (side, client)] for side in SIDES
        )
        ratio, drain = (
            statistics.median(map(read, worker)) / statistics.median(map(read, direct))
            for read in (COLUMNS["rows/s"][0], COLUMNS["drain rows/s"][0])
        )
        cpu = statistics.median(r.cpu.total_s for r in worker) / statistics.median(
            r.cpu.total_s for r in direct
        )
        verdict = "meets" if ratio >= TARGET_RATIO else "misses"
        print(
            f"worker / direct, {client:7} {ratio:5.2f} ({verdict} the {TARGET_RATIO} target);"
            f" drain only {drain:5.2f}; CPU a run {cpu:5.2f}"
        )
        ratios[client] = {"rows_per_s": ratio, "drain_only": drain, "cpu_a_run": cpu}
    return ratios


def parse_settings(pairs: Sequence[str]) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 records, jvm only")
    parser.add_argument("--records", type=int, default=400_000, help="a backlog's size")
    parser.add_argument("--repeat", type=int, default=3, help="runs a side and client")
    parser.add_argument("--clients", default=",".join(CLIENTS), help="jvm, python or both")
    parser.add_argument(
        "--spark",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for both sides (repeatable)",
    )
    parser.add_argument(
        "--worker-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a worker setting for the worker side only, e.g. delta.jvm.connector=none",
    )
    parser.add_argument(
        "--direct-in-bench",
        action="store_true",
        help="run the direct job in this process (which also polls), not a process of its own",
    )
    parser.add_argument("--serve-direct", action="store_true", help=argparse.SUPPRESS)
    add_json_option(parser)
    args = parser.parse_args()
    if args.serve_direct:
        serve_direct(parse_settings(args.spark))
        return
    result = ResultFile(__file__, args)
    records = 100_000 if args.quick else args.records
    clients = ("jvm",) if args.quick else tuple(args.clients.split(","))
    spark = parse_settings(args.spark)
    runs: list[Run] = []
    print(f"load at the start {load():.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, running_broker(Path(tmp)) as broker:
        servers, root = broker.bootstrap_servers, Path(tmp)
        sides: dict[str, AbstractContextManager[Side]] = {
            "worker": worker_side(
                servers,
                root / "worker",
                [*(f"{k}={v}" for k, v in spark.items()), *args.worker_set],
            ),
            "direct": direct_side(spark, args.direct_in_bench, root / "direct-job.log"),
        }
        with sides["worker"] as by_worker, sides["direct"] as directly:
            run_on = {"worker": by_worker, "direct": directly}
            warm_ups = [(side, client, True) for side, client in schedule(1, clients)]
            timed = [(side, client, False) for side, client in schedule(args.repeat, clients)]
            for n, (side, client, warm_up) in enumerate([*warm_ups, *timed]):
                size = min(records, WARM_UP_RUN) if warm_up else records
                run = run_on[side](servers, root / side / f"run-{n}", size, client)
                if not warm_up:
                    runs.append(run)
                print(
                    f"{'warm-up' if warm_up else 'run'} {n}: {side:6} {client:6}"
                    f" {run.seconds:6.2f} s {run.rows_per_s:9,.0f} rows/s,"
                    f" restart {run.restart_s:5.2f} s, {run.batches} batches, CPU Python"
                    f" {run.cpu.python_s:.2f} s JVM {run.cpu.jvm_s:.2f} s (waited"
                    f" {run.cpu.jvm_waited_s:.2f} s), load {run.load:.1f}",
                    flush=True,
                )
    worker_over_direct = report(runs, clients)
    result.write(
        {"runs": [run.figures() for run in runs], "worker_over_direct": worker_over_direct},
        {"records": records, "clients": list(clients), "warm_up": WARM_UP},
    )


if __name__ == "__main__":
    main()
