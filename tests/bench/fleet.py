"""A fleet of small connectors on one worker and on three: what creating, running and
restarting N of them costs (issue 34).

Each connector is a `generator` of one task (5 rows/s, a batch every 2 s) writing under
a temporary directory, the shape of the many small connectors Connect clusters run. Both
setups get the same work on one Apache Kafka broker: a worker is `spark.master=local[1]`,
and the three workers are one process each, in one group, sharing `checkpoint.root`. For
each (workers, N), on a new group:

* create latency: the first half of the connectors by one client, one after another,
  the second half by 8 clients at once (a thread pool), each request sent round-robin to
  the workers; a latency runs from a create's first request until it is answered 201
  (retries included), and the 409s and client time-outs on the way are counted;
* from the first create until every connector and task is RUNNING;
* batches per task over one steady minute after that (from the `ts` each committed
  batch's rows carry: exact), beside the ideal 60 s / `batch.interval.ms`, and each
  task's longest gap between batches in that minute (the target: at most 3 triggers);
* a restart: SIGTERM to every worker at once, each started again (same identity) once it
  has exited; from the SIGTERM until every task is RUNNING again in a new run;
* exactly once: every task's `seq` contiguous from 0, read after the workers are gone.

Every phase has a deadline and prints "did not finish" instead of hanging.

    python -m tests.bench.fleet --quick          # N = 10 and 40, on 1 and 3 workers
    python -m tests.bench.fleet                  # N = 10, 40 and 100
    python -m tests.bench.fleet --workers 1 --sizes 4   # one small run
    python -m tests.bench.fleet --workers 1 --sizes 100 --creates-only   # create latency
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

import httpx

from tests.bench.result_file import ResultFile, add_json_option
from tests.support.bounce import TaskOutput, read_task_output
from tests.support.cluster import Cluster, generator_config
from tests.support.polling import wait_until
from tests.support.processes import running_broker

ROWS_PER_SECOND: Final = 5
BATCH_INTERVAL_MS: Final = 2000
IDEAL_BATCHES: Final = 60_000 // BATCH_INTERVAL_MS
"""Per task in a steady minute, if every trigger fired on time."""
GAP_TARGET_S: Final = 3 * BATCH_INTERVAL_MS / 1000
"""Issue 34's cadence target: no task's longest steady gap over three triggers."""
CLIENTS: Final = 8
REQUEST_TIMEOUT_S: Final = 100.0
"""Beyond the herder's own 90 s, after which it answers 409: a client time-out is a
request the worker never answered."""
RETRY_PAUSE_S: Final = 1.0
CREATE_DEADLINE_S: Final = 1200.0
RUNNING_DEADLINE_S: Final = 600.0
SETTLE_S: Final = 10.0
"""After all are RUNNING, before the steady minute: the last tasks' first batch (their
query's start) is not their cadence."""
STEADY_S: Final = 60.0
GRACE_S: Final = 60.0
"""The StatefulSet's termination grace, as the rolling-bounce bench uses."""
READY_DEADLINE_S: Final = 300.0
WORKER_SETTINGS: Final = ("spark.master=local[1]",)

T = TypeVar("T")


def connector_names(count: int) -> list[str]:
    return [f"fleet-{index:03d}" for index in range(count)]


# --- figures (pure) -------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest rank: with fewer than 100 values p99 is the maximum."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def latency_line(latencies: Sequence[float]) -> str:
    if not latencies:
        return "none answered 201"
    return (
        f"p50 {percentile(latencies, 0.5):6.2f} s  p99 {percentile(latencies, 0.99):6.2f} s  "
        f"max {max(latencies):6.2f} s"
    )


def batches_in(output: TaskOutput, start: float, end: float) -> int:
    """Committed batches planned in [start, end) (epoch seconds)."""
    return sum(1 for t in output.batch_times if start <= t < end)


@dataclass(frozen=True)
class Creates:
    """One client's or one pool's creates."""

    latencies: tuple[float, ...]
    conflicts: int
    """409s other than "already exists" (a retried create whose first request did it)."""
    timeouts: int
    not_created: tuple[str, ...]

    def line(self, label: str) -> str:
        missing = f"  NOT CREATED {len(self.not_created)}" if self.not_created else ""
        return (
            f"  create, {label:9} ({len(self.latencies):3}): {latency_line(self.latencies)}  "
            f"409s {self.conflicts}  time-outs {self.timeouts}{missing}"
        )


@dataclass
class Run:
    """What one (workers, N) run measured; None where a phase did not finish."""

    workers: int
    size: int
    sequential: Creates | None = None
    concurrent: Creates | None = None
    all_running_s: float | None = None
    steady: tuple[float, float] | None = None
    """The steady minute's [start, end), epoch seconds."""
    exit_s: float | None = None
    restart_s: float | None = None
    restarted: float | None = None
    """When every task was RUNNING again after the restart, epoch seconds."""
    outputs: dict[str, TaskOutput] = field(default_factory=dict)
    creates_only: bool = False
    """`--creates-only`: the phases after the creates were skipped."""

    def silent_after_restart(self) -> int | None:
        """Tasks that committed no batch after the restart (the bench waits up to
        `RUNNING_DEADLINE_S` for one from each)."""
        if self.restarted is None:
            return None
        return sum(1 for o in self.outputs.values() if not o.batches_after(self.restarted))

    def steady_batches(self) -> list[int]:
        if self.steady is None:
            return []
        return [batches_in(o, *self.steady) for o in self.outputs.values()]

    def steady_gaps(self) -> list[float]:
        """Each task's longest gap between batches that ended in the steady minute."""
        if self.steady is None:
            return []
        start, end = self.steady
        return [
            max((g.seconds for g in o.gaps(start) if g.before <= end), default=math.inf)
            for o in self.outputs.values()
        ]

    @property
    def exactly_once(self) -> bool:
        return len(self.outputs) == self.size and all(o.exactly_once for o in self.outputs.values())

    def report(self) -> str:
        lines = [f"{self.workers} worker(s), {self.size} connectors:"]
        for creates, label in ((self.sequential, "1 client"), (self.concurrent, "8 clients")):
            lines.append(creates.line(label) if creates else f"  create, {label}: did not finish")
        if self.creates_only:
            return "\n".join(lines)
        lines.append(f"  all RUNNING: {seconds(self.all_running_s)} after the first create")
        batches = self.steady_batches()
        if batches:
            idle = sum(1 for b in batches if b == 0)
            lines.append(
                f"  steady minute, batches per task: min {min(batches)}  median "
                f"{statistics.median(batches):g}  ideal {IDEAL_BATCHES}; "
                f"{idle} of {len(batches)} tasks committed nothing"
            )
            gaps = self.steady_gaps()
            lines.append(
                f"  steady minute, longest gap per task: min {min(gaps):.1f} s  median "
                f"{statistics.median(gaps):.1f} s  max {max(gaps):.1f} s; "
                f"{sum(1 for g in gaps if g > GAP_TARGET_S)} of {len(gaps)} over "
                f"{GAP_TARGET_S:g} s (3 triggers)"
            )
        else:
            lines.append("  steady minute: not measured (not all RUNNING)")
        silent = self.silent_after_restart()
        lines.append(
            f"  restart: exited {seconds(self.exit_s)} after SIGTERM, all RUNNING again "
            f"{seconds(self.restart_s)} after it"
            + ("" if silent is None else f"; {silent} tasks committed nothing after that")
        )
        rows = sum(len(o.seqs) for o in self.outputs.values())
        broken = sorted(name for name, o in self.outputs.items() if not o.exactly_once)
        lines.append(
            f"  rows exactly once: {'yes' if self.exactly_once else 'NO'} "
            f"({len(self.outputs)} tasks, {rows:,} rows"
            + (f"; not contiguous: {', '.join(broken[:10])}" if broken else "")
            + ")"
        )
        return "\n".join(lines)

    def figures(self) -> dict[str, Any]:
        """The run for its result file: what `report` and `row` print, as numbers."""
        return {
            "workers": self.workers,
            "connectors": self.size,
            "creates_1_client": asdict(self.sequential) if self.sequential else None,
            "creates_8_clients": asdict(self.concurrent) if self.concurrent else None,
            "all_running_s": self.all_running_s,
            "steady_batches_per_task": self.steady_batches(),
            "steady_longest_gap_s": [g if math.isfinite(g) else None for g in self.steady_gaps()],
            "exit_s": self.exit_s,
            "restart_s": self.restart_s,
            "silent_after_restart": self.silent_after_restart(),
            "exactly_once": self.exactly_once,
            "row": self.row(),
        }

    def row(self) -> str:
        """The run as a row of the docs' table."""
        seq, con = self.sequential, self.concurrent
        batches = self.steady_batches()
        steady = (
            f"{min(batches)} / {statistics.median(batches):g} / {sum(1 for b in batches if b == 0)}"
            if batches
            else "-"
        )
        return (
            f"| {self.workers} | {self.size} "
            f"| {short(seq)} | {short(con)} "
            f"| {seconds(self.all_running_s)} | {steady} | {seconds(self.restart_s)} "
            f"| {'yes' if self.exactly_once else 'no'} |"
        )


TABLE_HEAD: Final = (
    "| workers | N | create s, 1 client: p50 / p99 / max (409s, time-outs) "
    "| create s, 8 clients: p50 / p99 / max (409s, time-outs) | all RUNNING "
    f"| steady minute, batches per task: min / median / tasks with none (ideal {IDEAL_BATCHES}) "
    "| restart until all RUNNING | every `seq` once |\n"
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
)


def short(creates: Creates | None) -> str:
    if creates is None or not creates.latencies:
        return "did not finish"
    values = creates.latencies
    return (
        f"{percentile(values, 0.5):.2f} / {percentile(values, 0.99):.2f} / {max(values):.2f} "
        f"({creates.conflicts}, {creates.timeouts})"
    )


def seconds(value: float | None) -> str:
    return "did not finish" if value is None else f"{value:.1f} s"


# --- creating -------------------------------------------------------------------------------


@dataclass
class Attempts:
    conflicts: int = 0
    timeouts: int = 0


def create_one(
    client: httpx.Client, url: str, name: str, config: dict[str, str], deadline: float
) -> float | Attempts:
    """Seconds until `name` is created (a 201, or "already exists" after a retry), or
    the failed attempts if the deadline passed first."""
    began, seen = time.monotonic(), Attempts()
    body = {"name": name, "config": config}
    while time.monotonic() < deadline:
        try:
            answer = client.post(f"{url}/connectors", json=body)
        except httpx.TimeoutException:
            seen.timeouts += 1
            continue
        if answer.status_code == 201:
            return time.monotonic() - began
        exists = answer.status_code == 409 and "already exists" in answer.text
        if exists and seen != Attempts():
            return time.monotonic() - began
        if exists or answer.status_code != 409:
            raise RuntimeError(f"POST /connectors {name}: {answer.status_code} {answer.text}")
        seen.conflicts += 1
        time.sleep(RETRY_PAUSE_S)
    return seen


def create_many(
    urls: Sequence[str], names: Sequence[str], output: Path, clients: int, deadline: float
) -> Creates:
    """`names` created by `clients` threads, request i going to `urls[i % len(urls)]`.

    The threads share one HTTP client (its connections kept alive), as a REST client
    would: a client made per request (`httpx.post`) cost 57 ms of CPU in its TLS set-up
    alone, under the GIL, which the 8 threads queued for and the latencies counted.
    """

    def one(index: int) -> tuple[str, float | Attempts]:
        name = names[index]
        url = urls[index % len(urls)]
        return name, create_one(
            client,
            url,
            name,
            generator_config(output / name, 1, ROWS_PER_SECOND, BATCH_INTERVAL_MS),
            deadline,
        )

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    with (
        httpx.Client(timeout=REQUEST_TIMEOUT_S, limits=limits) as client,
        ThreadPoolExecutor(clients, thread_name_prefix="fleet-client") as pool,
    ):
        results = list(pool.map(one, range(len(names))))
    latencies = [r for _, r in results if isinstance(r, float)]
    attempts = [r for _, r in results if isinstance(r, Attempts)]
    return Creates(
        tuple(latencies),
        sum(a.conflicts for a in attempts),
        sum(a.timeouts for a in attempts),
        tuple(n for n, r in results if isinstance(r, Attempts)),
    )


# --- watching -------------------------------------------------------------------------------


Runs = dict[str, str | None]
"""Per connector: its task's `started_at` while RUNNING on a live worker, else None."""


def task_runs(cluster: Cluster) -> Runs:
    live = {w.url.removeprefix("http://") for w in cluster.alive()}
    expanded: dict[str, Any] = cluster.read("/connectors?expand=status")
    runs: Runs = {}
    for name, entry in expanded.items():
        status = entry["status"]
        tasks = status["tasks"]
        running = (
            status["connector"]["state"] == "RUNNING"
            and len(tasks) == 1
            and tasks[0]["state"] == "RUNNING"
            and tasks[0]["worker_id"] in live
        )
        runs[name] = tasks[0].get("started_at") if running else None
    return runs


def not_running(runs: Runs, names: Sequence[str], before: Runs) -> list[str]:
    """The connectors of `names` not RUNNING in a run other than their run in `before`."""
    return [n for n in names if runs.get(n) is None or runs.get(n) == before.get(n)]


def bounded(what: str, deadline_s: float, action: Callable[[], T]) -> T | None:
    """`action`'s result, or None (and a line saying so) if its wait ran out."""
    try:
        return action()
    except AssertionError as exc:
        print(f"  {what}: did not finish in {deadline_s:g} s ({str(exc)[:300]})", flush=True)
        return None


def wait_all_running(cluster: Cluster, names: Sequence[str], before: Runs) -> Runs | None:
    def observe() -> list[str]:
        return not_running(task_runs(cluster), names, before)

    def wait() -> Runs:
        wait_until(
            observe,
            RUNNING_DEADLINE_S,
            interval_s=1.0,
            what="every task RUNNING",
            until=lambda missing: not missing,
        )
        return task_runs(cluster)

    return bounded("all RUNNING", RUNNING_DEADLINE_S, wait)


def restart_all(cluster: Cluster) -> float:
    """SIGTERM to every worker at once; each started again (same identity) as it exits.
    Seconds from the SIGTERM until the last one exited."""
    signalled = time.monotonic()

    def bounce(index: int) -> float:
        cluster.workers[index].stop(GRACE_S)
        exited = time.monotonic()
        cluster.restart(index)
        return exited

    with ThreadPoolExecutor(len(cluster.workers)) as pool:
        exits = list(pool.map(bounce, range(len(cluster.workers))))
    return max(exits) - signalled


# --- one run --------------------------------------------------------------------------------


def run_fleet(
    bootstrap: str, root: Path, workers: int, size: int, *, creates_only: bool = False
) -> Run:
    """A new group of `workers` given `size` connectors. A run that stops early (a worker
    never ready, a create refused) still reports what it measured and lets the next run
    go on; the output is read once every worker is gone (the file sink compacts its
    metadata log while it runs)."""
    run = Run(workers, size, creates_only=creates_only)
    names = connector_names(size)
    output = root / "out"
    cluster = Cluster(bootstrap, root, size=workers, settings=WORKER_SETTINGS)
    try:
        with cluster.running():
            measure_running(cluster, run, names, output)
    except (AssertionError, RuntimeError, httpx.HTTPError) as exc:
        print(f"  stopped early: {type(exc).__name__}: {str(exc)[:500]}", flush=True)
    run.outputs = {n: read_task_output(output / n / "task-0", 0) for n in names}
    print(run.report(), flush=True)
    return run


def measure_running(cluster: Cluster, run: Run, names: list[str], output: Path) -> None:
    urls = [w.url for w in cluster.workers]
    half = len(names) // 2
    first_create = time.monotonic()
    deadline = first_create + CREATE_DEADLINE_S
    run.sequential = create_many(urls, names[:half], output, 1, deadline)
    run.concurrent = create_many(urls, names[half:], output, CLIENTS, deadline)
    if run.creates_only:
        return
    running = wait_all_running(cluster, names, {})
    if running is None:
        return
    run.all_running_s = time.monotonic() - first_create
    start = time.time() + SETTLE_S
    run.steady = (start, start + STEADY_S)
    time.sleep(SETTLE_S + STEADY_S)
    signalled = time.monotonic()
    run.exit_s = restart_all(cluster)
    if wait_all_running(cluster, names, running) is not None:
        run.restart_s = time.monotonic() - signalled
        run.restarted = time.time()
        wait_for_batches(output, names, run.restarted)


def wait_for_batches(output: Path, names: Sequence[str], moment: float) -> None:
    """Until every task has committed a batch planned after `moment`, so that the
    exactly-once check covers the run after the restart."""

    def waiting() -> list[str]:
        return [
            n for n in names if not read_task_output(output / n / "task-0", 0).batches_after(moment)
        ]

    bounded(
        "a batch from every task after the restart",
        RUNNING_DEADLINE_S,
        lambda: wait_until(
            waiting,
            RUNNING_DEADLINE_S,
            interval_s=2.0,
            what="a batch of each",
            until=lambda w: not w,
        ),
    )


# --- the bench ------------------------------------------------------------------------------


def header() -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"fleet bench, {now}, commit {commit or 'unknown'}, load average {load()}"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.contextmanager
def directory(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="sparkherd-fleet-") as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> list[Run]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10 and 40 only")
    parser.add_argument("--sizes", help="comma-separated N (default 10,40,100; quick 10,40)")
    parser.add_argument("--workers", default="1,3", help="comma-separated worker counts")
    parser.add_argument("--keep", type=Path, help="run in this directory and keep its logs")
    parser.add_argument(
        "--creates-only",
        action="store_true",
        help="measure the creates only (the tasks are still starting when the last answers)",
    )
    add_json_option(parser)
    args = parser.parse_args(argv)
    result = ResultFile(__file__, args, argv)
    sizes = [int(s) for s in (args.sizes or ("10,40" if args.quick else "10,40,100")).split(",")]
    setups = [int(w) for w in args.workers.split(",")]
    print(header(), flush=True)
    print(
        f"each connector: generator, 1 task, {ROWS_PER_SECOND} rows/s, a batch every "
        f"{BATCH_INTERVAL_MS} ms; workers {', '.join(WORKER_SETTINGS)}\n",
        flush=True,
    )
    runs: list[Run] = []
    with directory(args.keep) as root, running_broker(root) as broker:
        for workers in setups:
            for size in sizes:
                began = time.monotonic()
                where = root / f"w{workers}-n{size}"
                runs.append(
                    run_fleet(
                        broker.bootstrap_servers,
                        where,
                        workers,
                        size,
                        creates_only=args.creates_only,
                    )
                )
                print(f"  ({time.monotonic() - began:.0f} s)\n", flush=True)
    print(TABLE_HEAD)
    for run in runs:
        print(run.row())
    print(f"\nload average at the end {load()}")
    result.write(
        {"table_head": TABLE_HEAD, "runs": [run.figures() for run in runs]},
        {"sizes": sizes, "worker_counts": setups, "worker_settings": WORKER_SETTINGS},
    )
    return runs


if __name__ == "__main__":
    main()
