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

    python -m tests.bench.versus_iceberg_kafka_connect            # 1,000,000 records
    python -m tests.bench.versus_iceberg_kafka_connect --quick    # 100,000, 2 repeats

The last line printed is one JSON object `{"connect": {...}, "sparkherd": {...}}`, each
with the medians of the runs that finished `rows_per_s`, `commit_latency_p50_s`,
`commit_latency_p99_s`, `files`, `exactly_once` (every run finished and had each record
once) and `failed_runs` (a task FAILED, or the table gained no row for 120 s).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sparkherd.broker.kafka_kraft import KAFKA_VERSION
from tests.bench.result_file import ResultFile, add_json_option
from tests.support.iceberg_kafka_connect import (
    ICEBERG_VERSION,
    iceberg_plugin_path,
    iceberg_sink_config,
)
from tests.support.kafka_topics import create_topic, new_topic
from tests.support.lakehouse import iceberg_hadoop_table
from tests.support.processes import free_port, running_broker
from tests.support.versus_bench import (
    PARTITIONS,
    Contender,
    Failure,
    Figure,
    Outcome,
    Summary,
    Waves,
    alternate,
    bench_arguments,
    chosen_systems,
    connect_contender,
    fill_backlog,
    machine,
    percentile,
    print_summaries,
    produce_paced,
    producing,
    repeats_of,
    rows_ratio,
    sparkherd_contender,
    wait_count,
    wave_s,
)
from worker.kafka.client import Outgoing

TABLE = "bench.records"
DATA_TIMEOUT_S = 1800.0
STALL_S = 120.0
"""A run fails when the table gains no row for this long while rows are due (four
times Iceberg's sink's own commit timeout, after which it commits what it has)."""
SETTLE_INTERVALS = 3
"""Commit intervals the table is watched after the last record is in: a duplicate
committed late would show."""


@dataclass(frozen=True)
class Plan(Waves):
    commit_interval_ms: int
    connect_tasks: int


# --- records --------------------------------------------------------------------------------


def record(n: int, produced_ms: int) -> Outgoing:
    value = {"id": n, "produced_ms": produced_ms, "text": f"record {n:010d} of the bench"}
    return Outgoing(None, json.dumps(value).encode())


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


def latencies_s(rows: TableRows, ids: range) -> list[float]:
    among = pc.and_(pc.greater_equal(rows.ids, ids.start), pc.less(rows.ids, ids.stop))
    return [ms / 1000 for ms in pc.filter(rows.latency_ms, among).to_pylist()]


# --- the systems ----------------------------------------------------------------------------


def iceberg_connect(bootstrap: str, root: Path, topics: str, plan: Plan) -> Contender:
    control = f"connect-{free_port()}-control"
    create_topic(bootstrap, control, 1)
    config = iceberg_sink_config(
        topics, TABLE, root / "warehouse", plan.commit_interval_ms, plan.connect_tasks, control
    )
    return connect_contender(bootstrap, root, iceberg_plugin_path(root), config)


def iceberg_sparkherd(bootstrap: str, root: Path, topics: str, plan: Plan) -> Contender:
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
    return sparkherd_contender(bootstrap, root, config)


CONTENDERS = {"connect": iceberg_connect, "sparkherd": iceberg_sparkherd}


# --- one run --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run(Outcome):
    first_commit_s: float
    files: int
    rows: int
    expected: int


def wait_rows(contender: Contender, warehouse: Path, records: int, what: str) -> None:
    def count() -> int:
        return total_records(warehouse)

    wait_count(contender, count, records, what, stall_s=STALL_S, timeout_s=DATA_TIMEOUT_S)


def run_once(system: str, repeat: int, bootstrap: str, backlog: str, root: Path, plan: Plan) -> Run:
    root.mkdir(parents=True)
    live = new_topic(bootstrap, f"{system}-live", PARTITIONS)
    contender = CONTENDERS[system](bootstrap, root, f"{backlog},{live}", plan)
    warehouse = root / "warehouse"
    began = time.monotonic()
    with contender.taking_turn():
        contender.start()
        created = time.time()
        contender.create()
        wait_rows(contender, warehouse, plan.records, "the backlog committed")
        produce_paced(bootstrap, live, plan.latency_ids, plan.rate, record)
        wait_rows(contender, warehouse, plan.latency_ids.stop, "the latency wave committed")
        with producing(bootstrap, live, plan.crash_ids, plan.rate, record) as sent:
            wait_rows(
                contender, warehouse, plan.latency_ids.stop + 1, "a snapshot of the crash wave"
            )
            killed_mid_wave = not sent.is_set()
            restart_s = contender.crash_and_restart()
        wait_rows(contender, warehouse, plan.crash_ids.stop, "every record after the crash")
        time.sleep(SETTLE_INTERVALS * plan.commit_interval_ms / 1000)
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


# --- the report -----------------------------------------------------------------------------


def run_line(run: Run) -> str:
    return run.line(
        started=f"first commit {run.first_commit_s:5.1f} s",
        written=f"{run.files:5} files  ",
        once=f"({run.rows:,} rows, {run.expected:,} expected)",
    )


FIGURES = (
    Figure("rows_per_s", "rows/s", lambda r: r.rows_per_s, 0),
    Figure("commit_latency_p50_s", "commit latency p50", lambda r: r.p50_s, 2, " s"),
    Figure("commit_latency_p99_s", "p99", lambda r: r.p99_s, 2, " s"),
    Figure("files", "files", lambda r: r.files, 0),
)


def print_report(
    runs: Sequence[Run],
    failures: Sequence[Failure],
    systems: Sequence[str],
    plan: Plan,
    repeats: int,
) -> dict[str, Summary]:
    """Prints the summaries and returns them by system."""
    note = " (fewer than the default 3)" if repeats < 3 else ""
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
    report = print_summaries(runs, failures, systems, FIGURES, described)
    if (ratio := rows_ratio(report)) is not None:
        print(verdict(ratio, report["connect"], report["sparkherd"]))
    print(json.dumps(report))
    return report


def verdict(ratio: float, connect: Summary, herd: Summary) -> str:
    no_worse = float(herd["commit_latency_p50_s"] or 0) <= float(
        connect["commit_latency_p50_s"] or 0
    )
    return (
        f"sparkherd / Connect rows/s: {ratio:.2f} (target: at least 2); sparkherd's p50 "
        f"commit latency is {'no worse than' if no_worse else 'worse than'} Connect's"
    )


def main() -> None:
    parser = bench_arguments(__doc__.splitlines()[0], "100,000 records, 2 repeats", "1,000,000")
    parser.add_argument("--commit-interval-ms", type=int, default=2_000)
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    systems = chosen_systems(args.systems)
    repeats = repeats_of(args)
    rate = args.rate or 2_000
    plan = Plan(
        records=args.records or (100_000 if args.quick else 1_000_000),
        rate=rate,
        latency_records=int(wave_s(args) * rate),
        crash_records=int(wave_s(args) * rate),
        commit_interval_ms=args.commit_interval_ms,
        connect_tasks=args.connect_tasks,
    )
    with (
        tempfile.TemporaryDirectory(prefix="bench-iceberg-") as tmp,
        running_broker(Path(tmp)) as broker,
    ):
        bootstrap = broker.bootstrap_servers
        backlog = fill_backlog(bootstrap, plan.records, record)

        def run(system: str, repeat: int) -> Run:
            root = Path(tmp) / f"{system}-{repeat}"
            return run_once(system, repeat, bootstrap, backlog, root, plan)

        runs, failures = alternate(systems, repeats, run, run_line)
    report = print_report(runs, failures, systems, plan, repeats)
    result.write(
        {"summaries": report, "runs": [asdict(run) for run in runs], "failures": len(failures)},
        {"plan": asdict(plan), "systems": list(systems), "repeats": repeats},
    )


if __name__ == "__main__":
    main()
