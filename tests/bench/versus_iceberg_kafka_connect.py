"""Kafka into Apache Iceberg: Iceberg's own Kafka Connect sink and sparkherd's
`kafka-to-iceberg`, taking turns on one Apache Kafka (issue 31, item 4).

On one Apache Kafka broker (KRaft, `tests/support/processes.running_broker`) a backlog
topic of 4 partitions is filled once with JSON records `{id, produced_ms, text}`. Each
run starts one worker of one system (a group of its own), creates a table writer for
the backlog topic and a live topic of the run's own (4 partitions, empty), into a fresh
Hadoop-catalog table on a local warehouse, both committing every
`--commit-interval-ms`, and then:

1. throughput: the clock runs from the connector's creation to the snapshot holding
   the whole backlog (the snapshot's own commit time): rows/s to a committed snapshot,
   start-up included (the time to the first snapshot is printed beside it);
2. commit latency: `--rate` records a second are produced to the live topic for
   `--latency-s`, each stamped with its produce time; a row's latency is the commit
   time of the snapshot that added its data file minus its produce time, read from the
   table's manifests and files after the run (exact, and nothing polls the table for
   it). p50 and p99 over those rows;
3. a crash: another wave is produced at the same rate; once a snapshot holds some of
   it, the worker's every process gets SIGKILL, and it is started again (same identity,
   same storage) while the wave goes on. After everything is in and a few more commit
   intervals have passed with the worker still running, every id produced must be in
   the table exactly once.

Data files are those of the final snapshot. The systems alternate (Connect first in
even repeats, sparkherd first in odd ones) so a slow spell of the shared machine does
not land on one only; each figure is printed per run and as median and range.

* Kafka Connect: `ConnectDistributed` of the broker's version (`tests/support/
  kafka_connect.py`, heap 1 GB) with `org.apache.iceberg.connect.IcebergSinkConnector`
  of the Iceberg version sparkherd's Spark runtime has (`tests/support/
  iceberg_kafka_connect.py`), JSON without schemas (the table created from the first
  records), `tasks.max` = `--connect-tasks` (default 2: one per core; its coordinator
  commits for all of them).
* sparkherd: one worker (`spark.master=local[2]`, driver 1 GB, G1 as the direct job's),
  `kafka-to-iceberg` with one task: one Spark query reads all 4 partitions on both
  cores (two tasks would be two writers committing to one Hadoop table).

    python tests/bench/versus_iceberg_kafka_connect.py            # 1,000,000 records
    python tests/bench/versus_iceberg_kafka_connect.py --quick    # 100,000, 2 repeats

The last line printed is one JSON object `{"connect": {...}, "sparkherd": {...}}`, each
with the medians of the runs that finished `rows_per_s`, `commit_latency_p50_s`,
`commit_latency_p99_s`, `files`, `exactly_once` (every run finished and had each record
once) and `failed_runs` (a task FAILED, or the table gained no row for 120 s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.iceberg_kafka_connect import (
    ICEBERG_VERSION,
    iceberg_plugin_path,
    iceberg_sink_config,
)
from tests.support.kafka_connect import JVM_OPTIONS, ConnectWorker
from tests.support.kafka_topics import create_topic, new_topic
from tests.support.lakehouse import iceberg_hadoop_table
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port, running_broker
from tests.support.rest_client import Api
from worker.kafka.client import BlockingKafka, Outgoing
from worker.kafka_kraft import KAFKA_VERSION

PARTITIONS = 4
TABLE = "bench.records"
PRODUCE_CHUNK = 20_000
TICKS_PER_S = 10
READY_TIMEOUT_S = 300.0
DATA_TIMEOUT_S = 1800.0
STALL_S = 120.0
"""A run fails when the table gains no row for this long while rows are due (four
times Iceberg's sink's own commit timeout, after which it commits what it has)."""
SETTLE_INTERVALS = 3
"""Commit intervals the table is watched after the last record is in: a duplicate
committed late would show."""
SPARKHERD_SETTINGS = (
    "spark.master=local[2]",
    "spark.driver.extraJavaOptions=-XX:+UseG1GC",
    "scheduled.rebalance.max.delay.ms=0",
)
CONNECT_JVM_OPTIONS = (*(o for o in JVM_OPTIONS if not o.startswith("-Xm")), "-Xms1g", "-Xmx1g")
"""Connect's heap as large as sparkherd's Spark driver (`spark.driver.memory=1g`)."""
SYSTEMS = ("connect", "sparkherd")


@dataclass(frozen=True)
class Plan:
    records: int
    """The backlog."""
    rate: int
    """Records a second in the latency and crash waves."""
    latency_records: int
    crash_records: int
    commit_interval_ms: int
    connect_tasks: int

    @property
    def latency_ids(self) -> range:
        return range(self.records, self.records + self.latency_records)

    @property
    def crash_ids(self) -> range:
        end = self.latency_ids.stop
        return range(end, end + self.crash_records)


# --- records --------------------------------------------------------------------------------


def record(n: int, produced_ms: int) -> Outgoing:
    value = {"id": n, "produced_ms": produced_ms, "text": f"record {n:010d} of the bench"}
    return Outgoing(None, json.dumps(value).encode())


def produce_all(bootstrap: str, topic: str, ids: range) -> None:
    """As fast as one producer goes, each chunk stamped when it is made."""
    with BlockingKafka(bootstrap, "bench-backlog") as kafka:
        for start in range(ids.start, ids.stop, PRODUCE_CHUNK):
            now = int(time.time() * 1000)
            kafka.publish(
                topic, [record(n, now) for n in range(start, min(start + PRODUCE_CHUNK, ids.stop))]
            )


def produce_paced(bootstrap: str, topic: str, ids: range, rate: int) -> None:
    """`rate` records a second in ten ticks, each record stamped as it is sent; a tick
    that falls behind sends what is due."""
    with BlockingKafka(bootstrap, "bench-live") as kafka:
        began, sent = time.monotonic(), 0
        while sent < len(ids):
            due = min(len(ids), int((time.monotonic() - began) * rate) + rate // TICKS_PER_S)
            if due > sent:
                now = int(time.time() * 1000)
                kafka.publish(topic, [record(n, now) for n in ids[sent:due]])
                sent = due
            time.sleep(1 / TICKS_PER_S)


@contextlib.contextmanager
def producing(bootstrap: str, topic: str, ids: range, rate: int) -> Iterator[threading.Event]:
    """A paced wave in a thread; the event is set when it is all sent."""
    done, failure = threading.Event(), []

    def run() -> None:
        try:
            produce_paced(bootstrap, topic, ids, rate)
        except Exception as exc:  # re-raised in the caller's thread
            failure.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=run, name="bench-wave", daemon=True)
    thread.start()
    try:
        yield done
    finally:
        thread.join()
    if failure:
        raise failure[0]


# --- the table, read with pyiceberg (`tests/support/lakehouse.py`) ------------------------


@dataclass(frozen=True)
class Snapshot:
    committed_s: float
    total_records: int


def committed_snapshots(warehouse: Path) -> list[Snapshot]:
    """The table's snapshots, oldest first; none before it exists."""
    table = iceberg_hadoop_table(warehouse, TABLE)
    found = [] if table is None else table.snapshots()
    return [
        Snapshot(s.timestamp_ms / 1000, int(s.summary["total-records"] or 0) if s.summary else 0)
        for s in sorted(found, key=lambda s: s.timestamp_ms)
    ]


def total_records(warehouse: Path) -> int:
    return max((s.total_records for s in committed_snapshots(warehouse)), default=0)


def first_holding(history: Sequence[Snapshot], records: int) -> Snapshot:
    return next(s for s in history if s.total_records >= records)


@dataclass(frozen=True)
class TableRows:
    ids: pa.ChunkedArray
    latency_ms: pa.ChunkedArray
    """Per row: its snapshot's commit time minus its produce time."""
    files: int


def read_rows(warehouse: Path) -> TableRows:
    """Every live data file of the current snapshot with the commit time of the snapshot
    that added it (a manifest entry keeps that snapshot's id)."""
    iceberg = iceberg_hadoop_table(warehouse, TABLE)
    assert iceberg is not None, f"no table {TABLE} in {warehouse}"
    committed_ms = {s.snapshot_id: s.timestamp_ms for s in iceberg.snapshots()}
    entries = iceberg.inspect.entries().to_pylist()
    parts = []
    for entry in entries:
        if entry["status"] == 2 or entry["data_file"]["content"] != 0:
            continue
        path = entry["data_file"]["file_path"].removeprefix("file:")
        rows = pq.read_table(path, columns=["id", "produced_ms"])
        visible = pa.scalar(committed_ms[entry["snapshot_id"]], pa.int64())
        parts.append(rows.append_column("latency_ms", pc.subtract(visible, rows["produced_ms"])))
    rows = pa.concat_tables(parts, promote_options="permissive")
    return TableRows(rows["id"], rows["latency_ms"], len(parts))


def exactly_once(ids: pa.ChunkedArray, expected: int) -> bool:
    """Ids 0..expected-1, each once."""
    if len(ids) != expected:
        return False
    return expected == 0 or (
        pc.count_distinct(ids).as_py() == expected
        and pc.min(ids).as_py() == 0
        and pc.max(ids).as_py() == expected - 1
    )


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latencies_s(rows: TableRows, ids: range) -> list[float]:
    among = pc.and_(pc.greater_equal(rows.ids, ids.start), pc.less(rows.ids, ids.stop))
    return [ms / 1000 for ms in pc.filter(rows.latency_ms, among).to_pylist()]


# --- the systems ----------------------------------------------------------------------------


class Worker(Protocol):
    name: str

    @property
    def url(self) -> str: ...

    def start(self) -> Any: ...

    def wait_ready(self, timeout_s: float = ...) -> None: ...

    def kill(self) -> None:
        """SIGKILL to every process of the service (a Spark JVM too)."""

    def log_text(self) -> str: ...


@dataclass
class Contender:
    """One system's worker, its connector's config, and how to start the worker again
    as itself (same name, address and storage). The connector's name is the run's own:
    Connect keeps a sink's offsets in the group `connect-<name>`, on the one broker."""

    system: str
    worker: Worker
    connector: str
    config: dict[str, str]
    again: Callable[[], Worker]

    def start(self) -> None:
        self.worker.start()
        self.worker.wait_ready(READY_TIMEOUT_S)

    def create(self) -> None:
        path = f"/connectors/{self.connector}/config"
        Api(self.worker.url).call("PUT", path, 201, json=self.config)

    def crash_and_restart(self) -> float:
        """SIGKILL to every process of the worker, then the same worker started again;
        seconds until it answers `/health` 200."""
        killed = time.monotonic()
        self.worker.kill()
        self.worker = self.again()
        self.start()
        return time.monotonic() - killed

    def failed_task(self) -> str | None:
        """The trace of a FAILED task, if any (a run waiting for rows says why not)."""
        with contextlib.suppress(httpx.HTTPError, AssertionError, KeyError):
            for task in Api(self.worker.url).status(self.connector)["tasks"]:
                if task["state"] == "FAILED":
                    return str(task.get("trace", "FAILED"))[:2000]
        return None


def connect_contender(bootstrap: str, root: Path, topics: str, plan: Plan) -> Contender:
    group = f"connect-{free_port()}"
    control = f"{group}-control"
    create_topic(bootstrap, control, 1)
    settings = {
        "plugin.path": str(iceberg_plugin_path(root)),
        "scheduled.rebalance.max.delay.ms": "0",
    }
    worker = ConnectWorker(
        "connect", bootstrap, group, root, settings, jvm_options=CONNECT_JVM_OPTIONS
    )
    config = iceberg_sink_config(
        topics, TABLE, root / "warehouse", plan.commit_interval_ms, plan.connect_tasks, control
    )
    return Contender("connect", worker, root.name, config, worker.restarted)


def sparkherd_contender(bootstrap: str, root: Path, topics: str, plan: Plan) -> Contender:
    worker = WorkerProcess(
        "sparkherd",
        bootstrap,
        root / "checkpoints",
        root,
        [f"group.id=sparkherd-{free_port()}", *SPARKHERD_SETTINGS],
    )
    config = {
        "connector.class": "kafka-to-iceberg",
        "tasks.max": "1",
        "topics": topics,
        "kafka.bootstrap.servers": bootstrap,
        "iceberg.tables": TABLE,
        "iceberg.catalog.type": "hadoop",
        "iceberg.catalog.warehouse": str(root / "warehouse"),
        "trigger.interval.ms": str(plan.commit_interval_ms),
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "value.schema": "id BIGINT, produced_ms BIGINT, text STRING",
        "transform.sql": (
            "SELECT value.id AS id, value.produced_ms AS produced_ms, value.text AS text"
            " FROM source"
        ),
    }
    return Contender("sparkherd", worker, root.name, config, lambda: replace(worker, process=None))


CONTENDERS = {"connect": connect_contender, "sparkherd": sparkherd_contender}


# --- one run --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    system: str
    repeat: int
    rows_per_s: float
    first_commit_s: float
    p50_s: float
    p99_s: float
    files: int
    exactly_once: bool
    restart_s: float
    killed_mid_wave: bool
    rows: int
    expected: int
    wall_s: float


class RunFailedError(RuntimeError):
    """A run that cannot finish: a task FAILED, or the table stopped growing."""


def wait_rows(contender: Contender, warehouse: Path, records: int, what: str) -> None:
    last = [total_records(warehouse), time.monotonic()]

    def seen() -> int:
        if trace := contender.failed_task():
            raise RunFailedError(f"a task FAILED: {trace}")
        rows = total_records(warehouse)
        if rows != last[0]:
            last[:] = [rows, time.monotonic()]
        elif time.monotonic() - last[1] > STALL_S:
            raise RunFailedError(f"no new row for {STALL_S:g} s at {rows:,} rows ({what})")
        return rows

    wait_until(
        seen,
        DATA_TIMEOUT_S,
        interval_s=0.25,
        what=f"{contender.system}: {what}",
        until=lambda n: n >= records,
    )


def run_once(system: str, repeat: int, bootstrap: str, backlog: str, root: Path, plan: Plan) -> Run:
    root.mkdir(parents=True)
    live = new_topic(bootstrap, f"{system}-live", PARTITIONS)
    contender = CONTENDERS[system](bootstrap, root, f"{backlog},{live}", plan)
    warehouse = root / "warehouse"
    began = time.monotonic()
    try:
        contender.start()
        created = time.time()
        contender.create()
        wait_rows(contender, warehouse, plan.records, "the backlog committed")
        produce_paced(bootstrap, live, plan.latency_ids, plan.rate)
        wait_rows(contender, warehouse, plan.latency_ids.stop, "the latency wave committed")
        with producing(bootstrap, live, plan.crash_ids, plan.rate) as sent:
            wait_rows(
                contender, warehouse, plan.latency_ids.stop + 1, "a snapshot of the crash wave"
            )
            killed_mid_wave = not sent.is_set()
            restart_s = contender.crash_and_restart()
        wait_rows(contender, warehouse, plan.crash_ids.stop, "every record after the crash")
        time.sleep(SETTLE_INTERVALS * plan.commit_interval_ms / 1000)
    except BaseException:
        print(f"--- {system} log (last lines) ---\n{tail(contender.worker.log_text())}", flush=True)
        raise
    finally:
        contender.worker.kill()
    history = committed_snapshots(warehouse)
    rows = read_rows(warehouse)
    latency = latencies_s(rows, plan.latency_ids)
    return Run(
        system=system,
        repeat=repeat,
        rows_per_s=plan.records / (first_holding(history, plan.records).committed_s - created),
        first_commit_s=history[0].committed_s - created,
        p50_s=percentile(latency, 0.5),
        p99_s=percentile(latency, 0.99),
        files=rows.files,
        exactly_once=exactly_once(rows.ids, plan.crash_ids.stop),
        restart_s=restart_s,
        killed_mid_wave=killed_mid_wave,
        rows=len(rows.ids),
        expected=plan.crash_ids.stop,
        wall_s=time.monotonic() - began,
    )


def tail(text: str, lines: int = 30) -> str:
    """The log's last lines without REST access lines (the bench polls the status)."""
    kept = [line for line in text.splitlines() if line.strip() and " HTTP/1.1" not in line]
    return "\n".join(kept[-lines:])


# --- the report -----------------------------------------------------------------------------


def spread(values: Sequence[float], digits: int) -> str:
    return (
        f"{statistics.median(values):,.{digits}f} "
        f"[{min(values):,.{digits}f}-{max(values):,.{digits}f}]"
    )


def run_line(run: Run) -> str:
    once = "yes" if run.exactly_once else f"NO ({run.rows:,} rows, {run.expected:,} expected)"
    return (
        f"{run.system:10} #{run.repeat + 1}  {run.rows_per_s:10,.0f} rows/s  "
        f"first commit {run.first_commit_s:5.1f} s  latency p50 {run.p50_s:5.2f} s "
        f"p99 {run.p99_s:5.2f} s  {run.files:5} files  "
        f"{'SIGKILL mid-wave' if run.killed_mid_wave else 'SIGKILL after the wave'}, "
        f"restart {run.restart_s:4.1f} s  "
        f"exactly once: {once}  ({run.wall_s:.0f} s)"
    )


@dataclass(frozen=True)
class Failure:
    system: str
    repeat: int
    reason: str


Summary = dict[str, float | int | bool | None]


def summary(runs: Sequence[Run], failed: int) -> Summary:
    """Medians over the runs that finished; a failed run counts against exactly once."""
    if not runs:
        return dict.fromkeys(SUMMARY_KEYS) | {"exactly_once": False, "failed_runs": failed}
    return {
        "rows_per_s": round(statistics.median(r.rows_per_s for r in runs)),
        "commit_latency_p50_s": round(statistics.median(r.p50_s for r in runs), 2),
        "commit_latency_p99_s": round(statistics.median(r.p99_s for r in runs), 2),
        "files": round(statistics.median(r.files for r in runs)),
        "exactly_once": failed == 0 and all(r.exactly_once for r in runs),
        "failed_runs": failed,
    }


SUMMARY_KEYS = ("rows_per_s", "commit_latency_p50_s", "commit_latency_p99_s", "files")


def print_report(
    runs: Sequence[Run],
    failures: Sequence[Failure],
    systems: Sequence[str],
    plan: Plan,
    repeats: int,
    note: str,
) -> None:
    print(
        f"\n{plan.records:,} backlog records, then {plan.latency_records:,} and "
        f"{plan.crash_records:,} at {plan.rate:,}/s (SIGKILL and restart in the second), "
        f"{PARTITIONS} partitions, commit interval {plan.commit_interval_ms} ms, "
        f"{repeats} repeats each{note}; Apache Kafka {KAFKA_VERSION}, Iceberg "
        f"{ICEBERG_VERSION}, Hadoop catalog; {machine()}"
    )
    described = {
        "connect": f"Kafka Connect {KAFKA_VERSION} + IcebergSinkConnector {ICEBERG_VERSION}, "
        f"tasks.max={plan.connect_tasks}, heap 1 GB",
        "sparkherd": "kafka-to-iceberg, tasks.max=1, spark.master=local[2], driver 1 GB",
    }
    for system in systems:
        print(f"{system + ':':11}{described[system]}")
    print("median [range]:")
    report: dict[str, Summary] = {}
    for system in systems:
        mine = [r for r in runs if r.system == system]
        failed = [f for f in failures if f.system == system]
        report[system] = summary(mine, len(failed))
        failed_note = f"; {len(failed)} run(s) failed" if failed else ""
        if not mine:
            print(f"  {system:10} no run finished{failed_note}")
            continue
        print(
            f"  {system:10} rows/s {spread([r.rows_per_s for r in mine], 0)}; "
            f"commit latency p50 {spread([r.p50_s for r in mine], 2)} s, "
            f"p99 {spread([r.p99_s for r in mine], 2)} s; "
            f"files {spread([r.files for r in mine], 0)}; "
            f"exactly once after SIGKILL: {sum(r.exactly_once for r in mine)}/{len(mine)}"
            f"{failed_note}"
        )
    if len(report) == len(SYSTEMS) and all(s["rows_per_s"] for s in report.values()):
        print(verdict(report["connect"], report["sparkherd"]))
    print(json.dumps(report))


def verdict(connect: Summary, herd: Summary) -> str:
    ratio = float(herd["rows_per_s"] or 0) / max(1.0, float(connect["rows_per_s"] or 0))
    no_worse = float(herd["commit_latency_p50_s"] or 0) <= float(
        connect["commit_latency_p50_s"] or 0
    )
    return (
        f"sparkherd / Connect rows/s: {ratio:.2f} (target: at least 2); sparkherd's p50 "
        f"commit latency is {'no worse than' if no_worse else 'worse than'} Connect's"
    )


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, load {load}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 records, 2 repeats")
    parser.add_argument("--records", type=int, help="the backlog (default 1,000,000)")
    parser.add_argument("--repeats", type=int, help="runs per system (default 3)")
    parser.add_argument("--rate", type=int, default=2_000, help="records/s of the waves")
    parser.add_argument("--latency-s", type=float, help="the latency wave (default 30, quick 10)")
    parser.add_argument("--commit-interval-ms", type=int, default=2_000)
    parser.add_argument("--connect-tasks", type=int, default=2)
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help="a subset of connect,sparkherd to run"
    )
    args = parser.parse_args()
    systems = [s for s in SYSTEMS if s in args.systems.split(",")]
    repeats = args.repeats or (2 if args.quick else 3)
    note = " (fewer than the default 3)" if repeats < 3 else ""
    wave_s = args.latency_s or (10.0 if args.quick else 30.0)
    plan = Plan(
        records=args.records or (100_000 if args.quick else 1_000_000),
        rate=args.rate,
        latency_records=int(wave_s * args.rate),
        crash_records=int(wave_s * args.rate),
        commit_interval_ms=args.commit_interval_ms,
        connect_tasks=args.connect_tasks,
    )
    runs: list[Run] = []
    failures: list[Failure] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-iceberg-") as tmp,
        running_broker(Path(tmp)) as broker,
    ):
        bootstrap = broker.bootstrap_servers
        backlog = new_topic(bootstrap, "backlog", PARTITIONS)
        produced = time.monotonic()
        produce_all(bootstrap, backlog, range(plan.records))
        print(
            f"backlog of {plan.records:,} produced in {time.monotonic() - produced:.0f} s",
            flush=True,
        )
        for repeat in range(repeats):
            order = systems if repeat % 2 == 0 else systems[::-1]
            for system in order:
                root = Path(tmp) / f"{system}-{repeat}"
                try:
                    runs.append(run_once(system, repeat, bootstrap, backlog, root, plan))
                    print(run_line(runs[-1]), flush=True)
                except (RunFailedError, AssertionError) as exc:
                    failures.append(Failure(system, repeat, str(exc)))
                    print(f"{system:10} #{repeat + 1}  FAILED: {exc}", flush=True)
    print_report(runs, failures, systems, plan, repeats, note)


if __name__ == "__main__":
    main()
