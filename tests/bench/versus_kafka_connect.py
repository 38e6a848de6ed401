"""Kafka Connect and sparkherd through the same rolling bounce, on one Apache Kafka (issue 17).

On one Apache Kafka broker (KRaft, `tests/support/processes.running_broker`) each system
in turn gets N workers in a group of its own (own group id, own storage topics), one
source connector with the same number of tasks and the same
`scheduled.rebalance.max.delay.ms`, and the same rolling bounce: from the highest ordinal
down, SIGTERM to the worker's main process, wait for its exit (60 s grace, then
SIGKILL), start it again under the same name and address, wait for `/health` 200, next.
The systems take turns rather than share the two cores, so neither's figures carry the
other's load.

* Kafka Connect (`org.apache.kafka:connect-runtime` of the broker's version, fetched
  with Maven and cached, `tests/support/kafka_connect.py`): `VerifiableSourceConnector`,
  each task producing 10 records a second, each `{task, seqno, time_ms}`; its default
  protocol (`sessioned`, incremental cooperative) and `connect.protocol=eager`. A Connect
  worker's identity is its REST address, which it keeps.
* sparkherd: the `generator`, each task committing a batch of 10 rows a second to
  parquet; cooperative, with `group.instance.id` per worker and its defaults (warm-up
  before joining, hand-off on SIGTERM).

Per system, from the data (what a reader of the output sees): each task's longest gap
between two consecutive records (Connect: the `time_ms` its task stamped) or committed
batches (sparkherd: the batch time its rows carry) over the bounce; the worst task's and
the sum over tasks. From the workers: task stops (Connect: its workers' `Stopping task`
log lines; sparkherd: a task's run ending, sampled from `/workers` and the statuses),
rebalances (generations: Connect's `Joined group at generation` log lines, sparkherd's
`/workers`), and the time from the last worker's `/health` 200 to every task RUNNING on a
live worker with at most one task more on one worker than another. Before the bounces,
the REST differential (`tests/support/rest_script.py`) runs on a Connect and a sparkherd
worker; its mismatches close the report.

    python -m tests.bench.versus_kafka_connect            # 3 workers, 6 tasks, 60 s delay
    python -m tests.bench.versus_kafka_connect --quick    # 3 workers, 6 tasks, 10 s delay

The last line printed is one JSON object: `{"connect": {...}, "connect_eager": {...},
"sparkherd": {...}, "rest_mismatches": [...]}`, each system with
`worst_task_downtime_s`, `total_task_downtime_s`, `task_stops`, `rebalances` and
`converge_s`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from sparkherd.broker.kafka_kraft import KAFKA_VERSION
from tests.bench.result_file import ResultFile, add_json_option
from tests.support.bounce import (
    BATCH_INTERVAL_MS,
    ROWS_PER_SECOND,
    OwnershipSampler,
    Restart,
    TaskOutput,
    gap_table,
    median_max,
    read_outputs,
    restart_in_place,
    restarts_line,
    steady_generator_config,
    wait_for_batches_after,
)
from tests.support.cluster import Cluster
from tests.support.kafka_connect import (
    TEST_PLUGINS_VERSION,
    ConnectWorker,
    connect_jars,
    verifiable_source_config,
)
from tests.support.kafka_topics import read_topic
from tests.support.polling import wait_until
from tests.support.processes import free_port, running_broker
from tests.support.rest_script import INTENTIONAL, Differential, run_differential

GRACE_S = 60.0
"""Like a pod's `terminationGracePeriodSeconds`."""
CONNECTOR = "bounce"
RECORDS_PER_SECOND = 10
"""Per Connect task: a record every 100 ms."""
READY_TIMEOUT_S = 240.0
CONVERGE_TIMEOUT_S = 900.0
DATA_TIMEOUT_S = 180.0
POLL_S = 0.5

GENERATION = re.compile(r"Joined group at generation (\d+)")


@dataclass(frozen=True)
class SystemReport:
    system: str
    description: str
    outputs: tuple[TaskOutput, ...]
    since: float
    """The first SIGTERM (epoch seconds): gaps that end after it count."""
    task_stops: int
    rebalances: int
    converge_s: float
    restarts: tuple[Restart, ...]
    wall_s: float
    load: tuple[float, float]
    """The 1-minute load average when the bounce began and when it ended."""

    @property
    def longest_gaps_s(self) -> list[float]:
        return [o.longest_gap(self.since).seconds for o in self.outputs]

    @property
    def usual_gap_s(self) -> float:
        """The median gap of every task over the bounce: the cadence of the output."""
        return median_max([g.seconds for o in self.outputs for g in o.gaps(self.since)])[0]

    @property
    def exactly_once(self) -> bool:
        return bool(self.outputs) and all(o.exactly_once for o in self.outputs)

    def summary(self) -> dict[str, float | int]:
        gaps = self.longest_gaps_s
        return {
            "worst_task_downtime_s": round(max(gaps, default=0.0), 1),
            "total_task_downtime_s": round(sum(gaps), 1),
            "task_stops": self.task_stops,
            "rebalances": self.rebalances,
            "converge_s": round(self.converge_s, 1),
        }


def balanced(owners: Sequence[str | None], live: set[str], tasks: int) -> bool:
    """Every task RUNNING (its owner given) on a live worker, at most one more task on
    one live worker than on another."""
    if len(owners) != tasks or any(owner not in live for owner in owners):
        return False
    counts = Counter(owners)
    per_worker = [counts.get(worker, 0) for worker in live]
    return max(per_worker) - min(per_worker) <= 1


# --- Kafka Connect ------------------------------------------------------------------------


@dataclass
class ConnectGroup:
    """N Connect workers of one group; a restarted worker replaces its entry."""

    workers: list[ConnectWorker]

    def alive(self) -> list[ConnectWorker]:
        return [w for w in self.workers if w.process is not None and w.process.poll() is None]

    def status(self) -> dict[str, Any]:
        error: Exception | None = None
        for worker in self.alive():
            try:
                response = httpx.get(f"{worker.url}/connectors/{CONNECTOR}/status", timeout=10)
                response.raise_for_status()
                body: dict[str, Any] = response.json()
                return body
            except httpx.HTTPError as exc:
                error = exc
        raise error or httpx.ConnectError("no live Connect worker")

    def balanced(self, tasks: int) -> bool:
        live = {w.worker_id for w in self.alive()}
        running = [t["worker_id"] for t in self.status()["tasks"] if t["state"] == "RUNNING"]
        return balanced(running, live, tasks)

    def log_sizes(self) -> dict[str, int]:
        return {w.name: (w.log_dir / f"{w.name}.log").stat().st_size for w in self.workers}

    def log_since(self, sizes: dict[str, int]) -> tuple[str, str]:
        """Every worker's log before and after `sizes` (one worker's restarts append to
        one file)."""
        before, after = [], []
        for worker in self.workers:
            data = (worker.log_dir / f"{worker.name}.log").read_bytes()
            before.append(data[: sizes[worker.name]].decode(errors="replace"))
            after.append(data[sizes[worker.name] :].decode(errors="replace"))
        return "\n".join(before), "\n".join(after)


def connect_outputs(bootstrap: str, topic: str, tasks: int) -> list[TaskOutput]:
    """Each task's records in `topic`: its `seqno`s and the times it stamped them."""
    seqs: dict[int, list[int]] = {task: [] for task in range(tasks)}
    times: dict[int, set[float]] = {task: set() for task in range(tasks)}
    for record in read_topic(bootstrap, topic):
        value = json.loads(record.value or b"null")
        seqs[value["task"]].append(value["seqno"])
        times[value["task"]].add(value["time_ms"] / 1000)
    return [TaskOutput(t, tuple(sorted(seqs[t])), tuple(sorted(times[t]))) for t in range(tasks)]


def wait_for_records_after(bootstrap: str, topic: str, tasks: int, moment: float) -> None:
    wait_until(
        lambda: {o.task: o.batches_after(moment) for o in connect_outputs(bootstrap, topic, tasks)},
        DATA_TIMEOUT_S,
        interval_s=2,
        what=f"every Connect task to produce a record after {moment:.1f}",
        until=lambda counts: all(counts.values()),
    )


def create_connector(url: str, config: dict[str, str]) -> None:
    """POST the connector, again while Connect answers 409 for a rebalance under way."""

    def post() -> httpx.Response:
        body = {"name": CONNECTOR, "config": config}
        return httpx.post(f"{url}/connectors", json=body, timeout=60)

    answer = wait_until(
        post,
        READY_TIMEOUT_S,
        what="Kafka Connect to create the connector",
        until=lambda response: response.status_code != 409 or "exists" in response.text,
    )
    assert answer.status_code == 201 or "exists" in answer.text, answer.text


def restart_connect(group: ConnectGroup, index: int) -> Restart:
    """SIGTERM to the JVM, wait for its exit, start it again on the same address, wait
    for `/health` 200."""
    worker = group.workers[index]
    signalled = time.monotonic()
    exit_code = worker.stop(GRACE_S)
    exited = time.monotonic()
    back = worker.restarted().start()
    group.workers[index] = back
    back.wait_ready(READY_TIMEOUT_S)
    return Restart(worker.name, exit_code, exited - signalled, time.monotonic() - signalled)


def bounce_connect(
    bootstrap: str, root: Path, protocol: str, workers: int, tasks: int, delay_ms: int
) -> SystemReport:
    group_id = f"connect-{protocol}-{free_port()}"
    topic = f"{group_id}-records"
    settings = {"connect.protocol": protocol, "scheduled.rebalance.max.delay.ms": str(delay_ms)}
    (root / "logs").mkdir(parents=True, exist_ok=True)
    group = ConnectGroup(
        [
            ConnectWorker(f"connect-{index}", bootstrap, group_id, root / "logs", settings)
            for index in range(workers)
        ]
    )
    try:
        for worker in group.workers:
            worker.start()
        for worker in group.workers:
            worker.wait_ready(READY_TIMEOUT_S)
        create_connector(
            group.workers[0].url, verifiable_source_config(topic, tasks, RECORDS_PER_SECOND)
        )
        wait_until(lambda: group.balanced(tasks), CONVERGE_TIMEOUT_S, what="Connect balanced")
        wait_for_records_after(bootstrap, topic, tasks, time.time())
        sizes = group.log_sizes()
        since, started, load_before = time.time(), time.monotonic(), os.getloadavg()[0]
        restarts = [restart_connect(group, index) for index in reversed(range(workers))]
        last_ready = time.monotonic()
        wait_until(
            lambda: group.balanced(tasks),
            CONVERGE_TIMEOUT_S,
            interval_s=POLL_S,
            what="Connect to converge after the bounce",
        )
        converge_s = time.monotonic() - last_ready
        wait_for_records_after(bootstrap, topic, tasks, time.time())
        wall_s = time.monotonic() - started
        load = (load_before, os.getloadavg()[0])
        before, after = group.log_since(sizes)
    finally:
        for worker in group.workers:
            worker.kill()
    generations_before = [int(g) for g in GENERATION.findall(before)]
    generations_after = [int(g) for g in GENERATION.findall(after)]
    return SystemReport(
        system="connect" if protocol != "eager" else "connect_eager",
        description=f"Kafka Connect {KAFKA_VERSION}, connect.protocol={protocol}",
        outputs=tuple(connect_outputs(bootstrap, topic, tasks)),
        since=since,
        task_stops=len(re.findall(rf"Stopping task {CONNECTOR}-\d+ ", after)),
        rebalances=max(generations_after, default=0) - max(generations_before, default=0),
        converge_s=converge_s,
        restarts=tuple(restarts),
        wall_s=wall_s,
        load=load,
    )


# --- sparkherd ----------------------------------------------------------------------------


def sparkherd_balanced(cluster: Cluster, tasks: int) -> bool:
    live = {w.url.removeprefix("http://") for w in cluster.alive()}
    running = [v.worker_id for v in cluster.tasks() if v.state == "RUNNING"]
    return balanced(running, live, tasks)


def bounce_sparkherd(
    bootstrap: str, root: Path, workers: int, tasks: int, delay_ms: int
) -> SystemReport:
    settings = ["connect.protocol=compatible", f"scheduled.rebalance.max.delay.ms={delay_ms}"]
    cluster = Cluster(bootstrap, root, size=workers, settings=settings)
    for index, worker in enumerate(cluster.workers):
        worker.extra = [*worker.extra, f"group.instance.id=sparkherd-{index}"]
    output = root / "out"
    with cluster.running():
        cluster.create(CONNECTOR, steady_generator_config(output, tasks))
        cluster.wait_at_rest(tasks, CONVERGE_TIMEOUT_S)
        wait_for_batches_after(output, tasks, time.time(), DATA_TIMEOUT_S)
        since, started, load_before = time.time(), time.monotonic(), os.getloadavg()[0]
        with OwnershipSampler(cluster) as sampler:
            restarts = [
                restart_in_place(cluster, index, GRACE_S, ready_timeout_s=READY_TIMEOUT_S)
                for index in reversed(range(workers))
            ]
            last_ready = time.monotonic()
            wait_until(
                lambda: sparkherd_balanced(cluster, tasks),
                CONVERGE_TIMEOUT_S,
                interval_s=POLL_S,
                what="sparkherd to converge after the bounce",
            )
            converge_s = time.monotonic() - last_ready
            wait_for_batches_after(output, tasks, time.time(), DATA_TIMEOUT_S)
        wall_s = time.monotonic() - started
        load = (load_before, os.getloadavg()[0])
    return SystemReport(
        system="sparkherd",
        description="sparkherd, connect.protocol=compatible, group.instance.id per worker",
        outputs=tuple(read_outputs(output, tasks)),  # workers stopped: the output holds still
        since=since,
        task_stops=sum(sampler.seen.stops.values()),
        rebalances=sampler.seen.rebalances,
        converge_s=converge_s,
        restarts=tuple(restarts),
        wall_s=wall_s,
        load=load,
    )


# --- the report ---------------------------------------------------------------------------


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, load {load}"


def print_reports(
    reports: Sequence[SystemReport], workers: int, tasks: int, delay_ms: int, host: str
) -> None:
    print(
        f"\nrolling bounce of {workers} workers, {tasks} tasks, "
        f"scheduled.rebalance.max.delay.ms={delay_ms}, grace {GRACE_S:g} s, "
        f"one Apache Kafka {KAFKA_VERSION} broker (KRaft); machine: {host}\n"
    )
    print(
        "| system | worst task downtime s | total task downtime s | task stops | rebalances "
        "| converge s | usual gap s | worker restart s (median / max) | every seq once |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in reports:
        figures = r.summary()
        restart_med, restart_max = median_max([x.restart_s for x in r.restarts])
        print(
            f"| {r.description} | {figures['worst_task_downtime_s']} "
            f"| {figures['total_task_downtime_s']} | {r.task_stops} | {r.rebalances} "
            f"| {figures['converge_s']} | {r.usual_gap_s:.1f} "
            f"| {restart_med:.1f} / {restart_max:.1f} | {'yes' if r.exactly_once else 'no'} |"
        )
    print(
        "\ntask downtime: a task's longest gap between two consecutive records (Connect, "
        f"{RECORDS_PER_SECOND} a second) or committed batches (sparkherd, one a "
        f"{BATCH_INTERVAL_MS} ms, {ROWS_PER_SECOND} rows a second) over the bounce, read back "
        "from the data; usual gap: the median of all gaps (the cadence); converge: from the "
        "last worker's /health 200 to every task RUNNING and balanced; worker restart: "
        "SIGTERM to /health 200 of the new process."
    )
    print("\nlongest gap per task, s\n")
    print(gap_table(CONNECTOR, {r.system: r.longest_gaps_s for r in reports}))
    print("\nper worker: SIGTERM to exit / to /health 200, s (exit code)\n")
    for r in reports:
        print(
            f"{r.system}: {restarts_line(r.restarts)}; wall {r.wall_s:.0f} s; "
            f"load (1 min) {r.load[0]:.1f} at the first SIGTERM, {r.load[1]:.1f} at the end"
        )


def print_differential(differential: Differential) -> None:
    mismatches = differential.mismatches
    intentional = [m for m in mismatches if m in INTENTIONAL]
    print(
        f"\nREST differential: {len(differential.connect)} calls, {len(mismatches)} "
        f"differences ({len(intentional)} intentional); phases {dict(differential.seconds)}"
    )
    for mismatch in mismatches:
        print(f"  {'intentional' if mismatch in intentional else 'open':>11}: {mismatch}")


SYSTEMS = ("connect", "connect_eager", "sparkherd")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 workers, 6 tasks, 10 s delay")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--delay-ms", type=int, default=60_000)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--skip-rest", action="store_true", help="no REST differential")
    parser.add_argument(
        "--work-dir", type=Path, help="keep logs and data here (default: a temporary directory)"
    )
    add_json_option(parser)
    args = parser.parse_args(argv)
    result_file = ResultFile(__file__, args, argv)
    workers, tasks, delay_ms = (
        (3, 6, 10_000) if args.quick else (args.workers, args.tasks, args.delay_ms)
    )
    systems = [s for s in args.systems.split(",") if s]
    if unknown := set(systems) - set(SYSTEMS):
        parser.error(f"unknown system(s) {sorted(unknown)}; choose from {list(SYSTEMS)}")
    print(
        f"Kafka Connect {KAFKA_VERSION} (connect-test-plugins {TEST_PLUGINS_VERSION}): "
        f"{len(connect_jars())} jars",
        flush=True,
    )
    host = machine()
    runs: dict[str, Callable[[str, Path], SystemReport]] = {
        "connect": lambda b, r: bounce_connect(b, r, "sessioned", workers, tasks, delay_ms),
        "connect_eager": lambda b, r: bounce_connect(b, r, "eager", workers, tasks, delay_ms),
        "sparkherd": lambda b, r: bounce_sparkherd(b, r, workers, tasks, delay_ms),
    }
    reports: list[SystemReport] = []
    differential: Differential | None = None
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        if args.work_dir is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="sparkherd-vs-connect-"))
            root = Path(tmp)
        else:
            root = args.work_dir
            root.mkdir(parents=True, exist_ok=True)
        broker = stack.enter_context(running_broker(root))
        if not args.skip_rest:
            differential = run_differential(broker.bootstrap_servers, root / "rest")
            print_differential(differential)
        for system in systems:
            began = time.monotonic()
            reports.append(runs[system](broker.bootstrap_servers, root / system))
            print(f"{system}: done in {time.monotonic() - began:.0f} s", flush=True)
    print_reports(reports, workers, tasks, delay_ms, host)
    print(f"\nwall {time.monotonic() - started:.0f} s; load at the end {machine()}")
    result: dict[str, Any] = {r.system: r.summary() for r in reports}
    result["rest_mismatches"] = [] if differential is None else differential.mismatches
    print(json.dumps(result))
    result_file.write(result, {"workers": workers, "tasks": tasks, "delay_ms": delay_ms})
    return result


if __name__ == "__main__":
    main()
