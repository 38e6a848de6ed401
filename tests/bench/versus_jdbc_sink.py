"""Kafka into PostgreSQL by upserts: Debezium's JDBC sink on Kafka Connect and
sparkherd's `kafka-to-jdbc`, taking turns on one Apache Kafka and one PostgreSQL
(issue 32, item 5).

On one Apache Kafka broker (KRaft, `tests/support/processes.running_broker`) a backlog
topic of 4 partitions is filled once with keyed JSON records with schema (Connect's
`JsonConverter` envelope, keys too): record `n` is key `{id}` with value
`{id, seq: n, produced_ms, text: "record <n>"}`, over `--keys` distinct ids (id `n %
keys`), so most records update a row an earlier one wrote. A real PostgreSQL 15
(`tests/support/postgres.running_postgres`, with `track_commit_timestamp` on) holds one
table per run, created beforehand with the same columns for both systems (Debezium's
tasks race to create a missing table: one of two fails on the catalog's unique index).
Each run starts one worker of one system (a group of its own), creates an upsert sink
keyed by the record key for the backlog topic and a live topic of the run's own (4
partitions, empty), and then:

1. throughput: the clock runs from the connector's creation to the commit that made the
   table equal the backlog's final state (every id at its last `seq`): rows/s is backlog
   records over that time, start-up included. The table is checked twice a second; the
   time is that of the commit itself (`pg_xact_commit_timestamp` of the newest row);
2. latency: `--rate` records a second are produced to the live topic for `--latency-s`,
   each stamped with its produce time and each a new id; a row's latency is its
   transaction's commit time minus its produce time, read after the wave (exact, and
   nothing polls for it). p50 and p99 over those rows;
3. a crash: a wave at the same rate updates existing ids; once the table holds some of
   it, the worker's every process gets SIGKILL and it is started again (same identity,
   same storage) while the wave goes on. After the table holds every final value and a
   few seconds more have passed, it must equal the expected table exactly: every id
   once at its last value, nothing older left by a replay.

Both systems read the backlog topic from its start (a new consumer group each run).
The backlog's offsets are committed long before the crash (a latency wave lies
between), so no replay after it rewrites a backlog value over a newer one.

* Kafka Connect: `ConnectDistributed` of the broker's version (`tests/support/
  kafka_connect.py`, heap 1 GB) with `io.debezium.connector.jdbc.JdbcSinkConnector`
  (`tests/support/debezium_jdbc_sink.py`), `insert.mode=upsert`,
  `primary.key.mode=record_key`, `schema.evolution=basic`, its defaults otherwise
  (`batch.size` 500), `tasks.max` = `--connect-tasks` (default 2: one per core).
* sparkherd: one worker (`spark.master=local[2]`, driver 1 GB), `kafka-to-jdbc` with
  `insert.mode=upsert`, `pk.mode=record_key`, `auto.create`, `auto.evolve`,
  `tasks.max` = `--sparkherd-tasks` (default 1: one Spark query over the 4 partitions on
  both cores), `trigger.interval.ms` its default (1 s).

    python -m tests.bench.versus_jdbc_sink            # 500,000 records over 50,000 ids
    python -m tests.bench.versus_jdbc_sink --quick    # 50,000 over 5,000, 2 repeats

The last line printed is one JSON object `{"connect": {...}, "sparkherd": {...}}`, each
with the medians of the runs that finished `rows_per_s`, `latency_p50_s`,
`latency_p99_s`, `exactly_once` (every run finished and its table was the expected one
after the SIGKILL) and `failed_runs` (a task FAILED, or the table did not move for
`STALL_S`).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import psycopg2

from sparkherd.broker.kafka_kraft import KAFKA_VERSION
from tests.bench.result_file import ResultFile, add_json_option
from tests.support import versus_bench as versus
from tests.support.debezium_jdbc_sink import (
    DEBEZIUM_VERSION,
    debezium_plugin_path,
    debezium_sink_config,
)
from tests.support.kafka_topics import new_topic
from tests.support.postgres import PostgresServer, running_postgres
from tests.support.processes import running_broker
from worker.kafka.client import Outgoing

DATA_TIMEOUT_S: Final = 1800.0
STALL_S: Final = 120.0
"""A run fails when no more rows reach their expected value for this long while some
are due."""
SETTLE_S: Final = 5.0
"""How long the table is watched after it first equals the expected one: a replay that
wrote an older value late would show."""
CHECK_INTERVAL_S: Final = 0.5

KEY_SCHEMA: Final = {
    "type": "struct",
    "optional": False,
    "fields": [{"field": "id", "type": "int64", "optional": False}],
}
VALUE_SCHEMA: Final = {
    "type": "struct",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "seq", "type": "int64", "optional": False},
        {"field": "produced_ms", "type": "int64", "optional": False},
        {"field": "text", "type": "string", "optional": False},
    ],
}
COLUMNS: Final = (
    "id BIGINT PRIMARY KEY, seq BIGINT NOT NULL, produced_ms BIGINT NOT NULL, text TEXT NOT NULL"
)
"""The table both systems write, as either would create it from the schemas above."""


@dataclass(frozen=True)
class Plan(versus.Waves):
    """Record `n < records` updates id `n % keys`; the latency wave's records insert ids
    `keys, keys + 1, ...`; the crash wave's update ids `0, 1, ...` (at most `keys`)."""

    keys: int
    connect_tasks: int
    sparkherd_tasks: int

    def __post_init__(self) -> None:
        if not 0 < self.keys <= self.records:
            raise ValueError(f"--keys must be between 1 and the backlog ({self.records:,})")
        if self.crash_records > self.keys:
            raise ValueError(
                f"the crash wave ({self.crash_records:,} records) updates each id at most "
                f"once: at most --keys ({self.keys:,}); lower --rate or --latency-s"
            )

    def key_of(self, n: int) -> int:
        if n < self.records:
            return n % self.keys
        if n < self.latency_ids.stop:
            return self.keys + n - self.records
        return n - self.crash_ids.start


# --- records --------------------------------------------------------------------------------


def with_schema(schema: dict[str, Any], payload: dict[str, Any]) -> bytes:
    return json.dumps({"schema": schema, "payload": payload}).encode()


def record_maker(plan: Plan) -> versus.MakeRecord:
    def record(n: int, produced_ms: int) -> Outgoing:
        key = plan.key_of(n)
        value = {"id": key, "seq": n, "produced_ms": produced_ms, "text": f"record {n}"}
        return Outgoing(with_schema(KEY_SCHEMA, {"id": key}), with_schema(VALUE_SCHEMA, value))

    return record


# --- the expected table, checked in SQL ------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """What the table holds once a stage's records are all in: the backlog's last value
    of every id, the latency wave's ids if it ran, the crash wave's updates if it ran."""

    latency: bool
    crash: bool

    def rows(self, plan: Plan) -> int:
        return plan.keys + (plan.latency_records if self.latency else 0)


BACKLOG, LATENCY, CRASH = Stage(False, False), Stage(True, False), Stage(True, True)


def expected_rows_sql(plan: Plan, stage: Stage) -> tuple[str, dict[str, int]]:
    """A condition true of a row exactly when it is what `stage` expects of its id: at
    the last `seq` that id gets, with that record's text. Backlog id `k`'s last record
    is the largest `n < records` with `n % keys = k`."""
    crashed = plan.crash_records if stage.crash else 0
    latency = plan.latency_records if stage.latency else 0
    condition = (
        "text = 'record ' || seq AND ("
        "(id < %(crashed)s AND seq = %(crash_start)s + id)"
        " OR (id >= %(crashed)s AND id < %(keys)s"
        " AND seq = id + %(keys)s * ((%(records)s - 1 - id) / %(keys)s))"
        " OR (id >= %(keys)s AND id < %(keys)s + %(latency)s"
        " AND seq = %(records)s + id - %(keys)s))"
    )
    parameters = {
        "crashed": crashed,
        "crash_start": plan.crash_ids.start,
        "keys": plan.keys,
        "records": plan.records,
        "latency": latency,
    }
    return condition, parameters


class Table:
    """One run's table, read over a connection of the bench's own (autocommit)."""

    def __init__(self, server: PostgresServer, name: str) -> None:
        self.name = name
        self._connection = psycopg2.connect(server.dsn)
        self._connection.autocommit = True

    def close(self) -> None:
        self._connection.close()

    def query(self, sql: str, parameters: dict[str, int] | None = None) -> list[tuple[Any, ...]]:
        with self._connection.cursor() as cursor:
            cursor.execute(sql.replace("{table}", self.name), parameters)
            return list(cursor.fetchall())

    def create(self) -> None:
        with self._connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {self.name} ({COLUMNS})")

    def drop(self) -> None:
        with self._connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {self.name}")

    def matching(self, plan: Plan, stage: Stage) -> tuple[int, int, float | None]:
        """Rows as `stage` expects them, all rows, and the newest commit's epoch time."""
        condition, parameters = expected_rows_sql(plan, stage)
        ((matched, total, newest),) = self.query(
            f"SELECT count(*) FILTER (WHERE {condition}), count(*),"
            " extract(epoch FROM max(pg_xact_commit_timestamp(xmin)))::float8 FROM {table}",
            parameters,
        )
        return int(matched), int(total), newest

    def equals(self, plan: Plan, stage: Stage) -> bool:
        matched, total, _ = self.matching(plan, stage)
        return matched == total == stage.rows(plan)

    def latencies_s(self, plan: Plan) -> list[float]:
        """Per latency-wave row: its commit time minus its produce time."""
        rows = self.query(
            "SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin))::float8"
            " - produced_ms / 1000.0 FROM {table} WHERE id >= %(keys)s",
            {"keys": plan.keys},
        )
        return [float(latency) for (latency,) in rows]


def track_commit_timestamps(server: PostgresServer) -> None:
    """`track_commit_timestamp` on, which takes a restart of the server."""
    server.execute("ALTER SYSTEM SET track_commit_timestamp = on")
    server.stop()
    server.start()
    assert server.execute("SHOW track_commit_timestamp") == [("on",)]


# --- the systems ----------------------------------------------------------------------------


def jdbc_connect(
    bootstrap: str, root: Path, topics: str, server: PostgresServer, table: str, plan: Plan
) -> versus.Contender:
    config = debezium_sink_config(
        topics, table, server.jdbc_url, server.user, server.password, plan.connect_tasks
    )
    return versus.connect_contender(bootstrap, root, debezium_plugin_path(root), config)


def jdbc_sparkherd(
    bootstrap: str, root: Path, topics: str, server: PostgresServer, table: str, plan: Plan
) -> versus.Contender:
    config = {
        "connector.class": "kafka-to-jdbc",
        "tasks.max": str(plan.sparkherd_tasks),
        "topics": topics,
        "kafka.bootstrap.servers": bootstrap,
        "connection.url": server.jdbc_url,
        "connection.user": server.user,
        "connection.password": server.password,
        "table.name.format": table,
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "auto.create": "true",
        "auto.evolve": "true",
        "key.converter": "json",
        "key.converter.schemas.enable": "true",
        "value.converter": "json",
        "value.converter.schemas.enable": "true",
    }
    return versus.sparkherd_contender(bootstrap, root, config)


CONTENDERS = {"connect": jdbc_connect, "sparkherd": jdbc_sparkherd}


# --- one run --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run(versus.Outcome):
    matched_s: float
    """From the connector's creation to the backlog's final state in the table."""


def wait_stage(
    contender: versus.Contender, table: Table, plan: Plan, stage: Stage, what: str
) -> float:
    """Until the table is what `stage` expects; the epoch time of its newest commit then.
    Any new commit is progress (the backlog's first rounds bring no id to its last value)."""
    seen: list[tuple[int, int, float | None]] = [table.matching(plan, stage)]

    def count() -> int:
        seen[0] = matched, total, _ = table.matching(plan, stage)
        return matched if total == stage.rows(plan) else min(matched, stage.rows(plan) - 1)

    versus.wait_count(
        contender,
        count,
        stage.rows(plan),
        what,
        stall_s=STALL_S,
        timeout_s=DATA_TIMEOUT_S,
        interval_s=CHECK_INTERVAL_S,
        progress=lambda: seen[0][2],
    )
    return seen[0][2] or 0.0


def crash_seen(table: Table, plan: Plan) -> int:
    ((rows,),) = table.query(
        "SELECT count(*) FROM {table} WHERE id < %(keys)s AND seq >= %(start)s",
        {"keys": plan.keys, "start": plan.crash_ids.start},
    )
    return int(rows)


@contextlib.contextmanager
def run_table(server: PostgresServer, name: str) -> Iterator[Table]:
    table = Table(server, name)
    try:
        table.drop()
        table.create()
        yield table
        table.drop()
    finally:
        table.close()


def run_once(
    system: str,
    repeat: int,
    bootstrap: str,
    backlog: str,
    server: PostgresServer,
    root: Path,
    plan: Plan,
) -> Run:
    root.mkdir(parents=True)
    live = new_topic(bootstrap, f"{system}-live", versus.PARTITIONS)
    name = f"{system}_{repeat}"
    record = record_maker(plan)
    contender = CONTENDERS[system](bootstrap, root, f"{backlog},{live}", server, name, plan)
    began = time.monotonic()
    with run_table(server, name) as table, contender.taking_turn():
        contender.start()
        created = time.time()
        contender.create()
        matched = wait_stage(contender, table, plan, BACKLOG, "the backlog's final values")
        versus.produce_paced(bootstrap, live, plan.latency_ids, plan.rate, record)
        wait_stage(contender, table, plan, LATENCY, "the latency wave")
        latency = table.latencies_s(plan)
        with versus.producing(bootstrap, live, plan.crash_ids, plan.rate, record) as sent:
            versus.wait_count(
                contender,
                lambda: crash_seen(table, plan),
                1,
                "a row of the crash wave",
                stall_s=STALL_S,
                timeout_s=DATA_TIMEOUT_S,
            )
            killed_mid_wave = not sent.is_set()
            restart_s = contender.crash_and_restart()
        wait_stage(contender, table, plan, CRASH, "every final value after the crash")
        time.sleep(SETTLE_S)
        exactly_once = table.equals(plan, CRASH)
    return Run(
        system=system,
        repeat=repeat,
        rows_per_s=plan.records / (matched - created),
        matched_s=matched - created,
        p50_s=versus.percentile(latency, 0.5),
        p99_s=versus.percentile(latency, 0.99),
        exactly_once=exactly_once,
        restart_s=restart_s,
        killed_mid_wave=killed_mid_wave,
        wall_s=time.monotonic() - began,
    )


# --- the report -----------------------------------------------------------------------------


def run_line(run: Run) -> str:
    return run.line(started=f"backlog in {run.matched_s:5.1f} s")


FIGURES = (
    versus.Figure("rows_per_s", "rows/s", lambda r: r.rows_per_s, 0),
    versus.Figure("latency_p50_s", "latency p50", lambda r: r.p50_s, 2, " s"),
    versus.Figure("latency_p99_s", "p99", lambda r: r.p99_s, 2, " s"),
)


def print_report(
    runs: Sequence[Run],
    failures: Sequence[versus.Failure],
    systems: Sequence[str],
    plan: Plan,
    repeats: int,
    server_version: str,
) -> dict[str, versus.Summary]:
    """Prints the summaries and returns them by system."""
    note = " (fewer than the default 3)" if repeats < 3 else ""
    print(
        f"\n{plan.records:,} backlog records over {plan.keys:,} ids, then "
        f"{plan.latency_records:,} new ids and {plan.crash_records:,} updates at "
        f"{plan.rate:,}/s (SIGKILL and restart in the second), "
        f"{versus.PARTITIONS} partitions, {repeats} repeats each{note}; "
        f"Apache Kafka {KAFKA_VERSION}, {server_version}; {versus.machine()}"
    )
    described = {
        "connect": f"Kafka Connect {KAFKA_VERSION} + Debezium JdbcSinkConnector "
        f"{DEBEZIUM_VERSION}, tasks.max={plan.connect_tasks}, heap 1 GB",
        "sparkherd": f"kafka-to-jdbc, tasks.max={plan.sparkherd_tasks}, "
        "spark.master=local[2], driver 1 GB",
    }
    report = versus.print_summaries(runs, failures, systems, FIGURES, described)
    if (ratio := versus.rows_ratio(report)) is not None:
        print(f"sparkherd / Connect rows/s: {ratio:.2f} (target: at least 1)")
    print(json.dumps(report))
    return report


def main() -> None:
    parser = versus.bench_arguments(
        __doc__.splitlines()[0], "50,000 records over 5,000 ids, 2 repeats", "500,000"
    )
    parser.add_argument("--keys", type=int, help="distinct ids (default a tenth of --records)")
    parser.add_argument("--sparkherd-tasks", type=int, default=1)
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    systems = versus.chosen_systems(args.systems)
    repeats = versus.repeats_of(args)
    records = args.records or (50_000 if args.quick else 500_000)
    rate = args.rate or (500 if args.quick else 1_000)
    wave = int(versus.wave_s(args) * rate)
    plan = Plan(
        records=records,
        keys=args.keys or records // 10,
        rate=rate,
        latency_records=wave,
        crash_records=wave,
        connect_tasks=args.connect_tasks,
        sparkherd_tasks=args.sparkherd_tasks,
    )
    with (
        tempfile.TemporaryDirectory(prefix="bench-jdbc-") as tmp,
        running_broker(Path(tmp)) as broker,
        running_postgres(database="bench") as server,
    ):
        track_commit_timestamps(server)
        bootstrap = broker.bootstrap_servers
        backlog = versus.fill_backlog(bootstrap, plan.records, record_maker(plan))

        def run(system: str, repeat: int) -> Run:
            root = Path(tmp) / f"{system}-{repeat}"
            return run_once(system, repeat, bootstrap, backlog, server, root, plan)

        runs, failures = versus.alternate(systems, repeats, run, run_line)
        ((version,),) = server.execute("SELECT split_part(version(), ' on ', 1)")
    report = print_report(runs, failures, systems, plan, repeats, str(version))
    result.write(
        {"summaries": report, "runs": [asdict(run) for run in runs], "failures": len(failures)},
        {"plan": asdict(plan), "systems": list(systems), "repeats": repeats, "postgresql": version},
    )


if __name__ == "__main__":
    main()
