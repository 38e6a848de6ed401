"""What the benches that put a Kafka Connect sink beside a sparkherd connector share
(`tests/bench/versus_iceberg_kafka_connect.py`, `tests/bench/versus_jdbc_sink.py`): the
producers of the backlog and of the paced waves, each system's worker behind one
`Contender`, the alternation of the systems over the repeats, and the figures' report.

Both systems get the same memory (Connect's heap as large as sparkherd's Spark driver)
and the same rebalance delay, and they take turns on one broker, Connect first in even
repeats and sparkherd first in odd ones, so a slow spell of the shared machine does not
land on one only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

import httpx

from tests.support.kafka_connect import JVM_OPTIONS, ConnectWorker
from tests.support.kafka_topics import new_topic
from tests.support.polling import wait_until
from tests.support.processes import WARM_UP_ON, WorkerProcess, free_port
from tests.support.rest_client import Api
from worker.kafka.client import BlockingKafka, Outgoing

SYSTEMS: Final = ("connect", "sparkherd")
PARTITIONS: Final = 4
"""Of the backlog topic and of each run's live topic."""
READY_TIMEOUT_S: Final = 300.0
PRODUCE_CHUNK: Final = 20_000
TICKS_PER_S: Final = 10
SPARKHERD_SETTINGS: Final = (
    "spark.master=local[2]",
    "spark.driver.extraJavaOptions=-XX:+UseG1GC",
    "scheduled.rebalance.max.delay.ms=0",
    WARM_UP_ON,
)
"""The warm-up as deployed: a test worker has it off (`tests.support.processes`), and the
benches' sparkherd ran its first batch on a cold Spark (first commit 14-16 s after the
connector's creation with 100,000 records) while Connect's JVM had loaded its plugin."""
CONNECT_JVM_OPTIONS: Final = (
    *(o for o in JVM_OPTIONS if not o.startswith("-Xm")),
    "-Xms1g",
    "-Xmx1g",
)
"""Connect's heap as large as sparkherd's Spark driver (`spark.driver.memory=1g`)."""


@dataclass(frozen=True)
class Waves:
    """A backlog of `records` (numbers `0..records-1`), then two waves at `rate` records
    a second: one for the latency, one during which the worker is killed."""

    records: int
    rate: int
    latency_records: int
    crash_records: int

    @property
    def latency_ids(self) -> range:
        return range(self.records, self.records + self.latency_records)

    @property
    def crash_ids(self) -> range:
        end = self.latency_ids.stop
        return range(end, end + self.crash_records)


MakeRecord = Callable[[int, int], Outgoing]
"""Record number `n`, stamped with its produce time in epoch milliseconds."""


# --- producers ------------------------------------------------------------------------------


def produce_all(bootstrap: str, topic: str, ids: range, make: MakeRecord) -> None:
    """As fast as one producer goes, each chunk stamped when it is made."""
    with BlockingKafka(bootstrap, "bench-backlog") as kafka:
        for start in range(ids.start, ids.stop, PRODUCE_CHUNK):
            now = int(time.time() * 1000)
            chunk = range(start, min(start + PRODUCE_CHUNK, ids.stop))
            kafka.publish(topic, [make(n, now) for n in chunk])


def fill_backlog(bootstrap: str, records: int, make: MakeRecord) -> str:
    """A new topic of `PARTITIONS` holding records `0..records-1`; its name."""
    backlog = new_topic(bootstrap, "backlog", PARTITIONS)
    began = time.monotonic()
    produce_all(bootstrap, backlog, range(records), make)
    print(f"backlog of {records:,} produced in {time.monotonic() - began:.0f} s", flush=True)
    return backlog


def produce_paced(bootstrap: str, topic: str, ids: range, rate: int, make: MakeRecord) -> None:
    """`rate` records a second in ten ticks, each record stamped as it is sent; a tick
    that falls behind sends what is due."""
    with BlockingKafka(bootstrap, "bench-live") as kafka:
        began, sent = time.monotonic(), 0
        while sent < len(ids):
            due = min(len(ids), int((time.monotonic() - began) * rate) + rate // TICKS_PER_S)
            if due > sent:
                now = int(time.time() * 1000)
                kafka.publish(topic, [make(n, now) for n in ids[sent:due]])
                sent = due
            time.sleep(1 / TICKS_PER_S)


@contextlib.contextmanager
def producing(
    bootstrap: str, topic: str, ids: range, rate: int, make: MakeRecord
) -> Iterator[threading.Event]:
    """A paced wave in a thread; the event is set when it is all sent."""
    done, failure = threading.Event(), []

    def run() -> None:
        try:
            produce_paced(bootstrap, topic, ids, rate, make)
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

    def log_tail(self, lines: int = 30) -> str:
        """The log's last lines without REST access lines (the bench polls the status)."""
        text = self.worker.log_text()
        kept = [line for line in text.splitlines() if line.strip() and " HTTP/1.1" not in line]
        return "\n".join(kept[-lines:])

    @contextlib.contextmanager
    def taking_turn(self) -> Iterator[None]:
        """The run's body: on a failure the worker's last log lines are printed, and
        the worker is killed whatever happened."""
        try:
            yield
        except BaseException:
            print(f"--- {self.system} log (last lines) ---\n{self.log_tail()}", flush=True)
            raise
        finally:
            self.worker.kill()


def connect_contender(
    bootstrap: str, root: Path, plugins: Path, connector: dict[str, str]
) -> Contender:
    """A Connect worker of a group of its own with `plugins` as its `plugin.path`."""
    settings = {"plugin.path": str(plugins), "scheduled.rebalance.max.delay.ms": "0"}
    group = f"connect-{free_port()}"
    worker = ConnectWorker(
        "connect", bootstrap, group, root, settings, jvm_options=CONNECT_JVM_OPTIONS
    )
    return Contender("connect", worker, root.name, connector, worker.restarted)


def sparkherd_contender(bootstrap: str, root: Path, connector: dict[str, str]) -> Contender:
    """A sparkherd worker of a group of its own, its checkpoints under `root`."""
    worker = WorkerProcess(
        "sparkherd",
        bootstrap,
        root / "checkpoints",
        root,
        [f"group.id=sparkherd-{free_port()}", *SPARKHERD_SETTINGS],
    )
    return Contender(
        "sparkherd", worker, root.name, connector, lambda: replace(worker, process=None)
    )


class RunFailedError(RuntimeError):
    """A run that cannot finish: a task FAILED, or the table stopped growing."""


def wait_count(
    contender: Contender,
    count: Callable[[], int],
    target: int,
    what: str,
    *,
    stall_s: float,
    timeout_s: float,
    interval_s: float = 0.25,
    progress: Callable[[], object] | None = None,
) -> None:
    """Until `count()` reaches `target`; a FAILED task, or a table that has not moved for
    `stall_s` (its count, or `progress()` when given), fails the run at once (with the
    task's trace or the count it stuck at)."""
    moved = progress or count
    last, since = moved(), time.monotonic()

    def seen() -> int:
        nonlocal last, since
        if trace := contender.failed_task():
            raise RunFailedError(f"a task FAILED: {trace}")
        rows, now = count(), moved()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > stall_s:
            raise RunFailedError(f"no new row for {stall_s:g} s at {rows:,} rows ({what})")
        return rows

    wait_until(
        seen,
        timeout_s,
        interval_s=interval_s,
        what=f"{contender.system}: {what}",
        until=lambda n: n >= target,
    )


# --- the repeats ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What each run of either bench measures; a bench's run adds its own figures."""

    system: str
    repeat: int
    rows_per_s: float
    p50_s: float
    p99_s: float
    exactly_once: bool
    restart_s: float
    killed_mid_wave: bool
    wall_s: float

    def line(self, started: str, written: str = "", once: str = "") -> str:
        """The run's figures on one line: `started` after rows/s (how soon it wrote),
        `written` after the latency (what it wrote), `once` why not exactly once."""
        crash = "SIGKILL mid-wave" if self.killed_mid_wave else "SIGKILL after the wave"
        return (
            f"{self.system:10} #{self.repeat + 1}  {self.rows_per_s:10,.0f} rows/s  "
            f"{started}  latency p50 {self.p50_s:5.2f} s p99 {self.p99_s:5.2f} s  {written}"
            f"{crash}, restart {self.restart_s:4.1f} s  "
            f"exactly once: {'yes' if self.exactly_once else f'NO {once}'.strip()}  "
            f"({self.wall_s:.0f} s)"
        )


@dataclass(frozen=True)
class Failure:
    system: str
    repeat: int
    reason: str


R = TypeVar("R")


def alternate(
    systems: Sequence[str],
    repeats: int,
    run: Callable[[str, int], R],
    line: Callable[[R], str],
) -> tuple[list[R], list[Failure]]:
    """Every system `repeats` times, in turns (Connect first in even repeats, sparkherd
    first in odd ones), each run's figures printed as it ends; a run that raises
    `RunFailedError` or `AssertionError` is a failure and the next one goes on."""
    runs: list[R] = []
    failures: list[Failure] = []
    for repeat in range(repeats):
        for system in systems if repeat % 2 == 0 else systems[::-1]:
            try:
                runs.append(run(system, repeat))
                print(line(runs[-1]), flush=True)
            except (RunFailedError, AssertionError) as exc:
                failures.append(Failure(system, repeat, str(exc)))
                print(f"{system:10} #{repeat + 1}  FAILED: {exc}", flush=True)
    return runs, failures


def chosen_systems(argument: str) -> list[str]:
    """`--systems`: a subset of connect,sparkherd, in the canonical order."""
    return [s for s in SYSTEMS if s in argument.split(",")]


def bench_arguments(description: str, quick: str, records: str) -> argparse.ArgumentParser:
    """The options both benches take; each adds its own and sets its defaults."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--records", type=int, help=f"the backlog (default {records})")
    parser.add_argument("--repeats", type=int, help="runs per system (default 3; quick 2)")
    parser.add_argument("--rate", type=int, help="records/s of the waves")
    parser.add_argument("--latency-s", type=float, help="each wave (default 30 s, quick 10)")
    parser.add_argument("--connect-tasks", type=int, default=2)
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help="a subset of connect,sparkherd to run"
    )
    return parser


def repeats_of(args: argparse.Namespace) -> int:
    return int(args.repeats or (2 if args.quick else 3))


def wave_s(args: argparse.Namespace) -> float:
    return float(args.latency_s or (10.0 if args.quick else 30.0))


# --- figures --------------------------------------------------------------------------------


Summary = dict[str, float | int | bool | None]


@dataclass(frozen=True)
class Figure:
    """One figure of the summary: its JSON key, its printed label and unit, how it is
    read off a run, and its decimals (0: a whole number)."""

    key: str
    label: str
    of: Callable[[Any], float]
    digits: int
    unit: str = ""


def summary(runs: Sequence[Outcome], failed: int, figures: Sequence[Figure]) -> Summary:
    """Medians over the runs that finished; a failed run counts against exactly once."""
    once: Summary = {
        "exactly_once": failed == 0 and bool(runs) and all(r.exactly_once for r in runs),
        "failed_runs": failed,
    }
    if not runs:
        return dict.fromkeys(f.key for f in figures) | once
    medians: Summary = {
        f.key: round(statistics.median(f.of(r) for r in runs), f.digits or None) for f in figures
    }
    return medians | once


def print_summaries(
    runs: Sequence[Outcome],
    failures: Sequence[Failure],
    systems: Sequence[str],
    figures: Sequence[Figure],
    described: Mapping[str, str],
) -> dict[str, Summary]:
    """Each system's setup, then its medians and ranges; the summaries by system."""
    for system in systems:
        print(f"{system + ':':11}{described[system]}")
    print("median [range]:")
    report: dict[str, Summary] = {}
    for system in systems:
        mine = [r for r in runs if r.system == system]
        failed = [f for f in failures if f.system == system]
        report[system] = summary(mine, len(failed), figures)
        failed_note = f"; {len(failed)} run(s) failed" if failed else ""
        if not mine:
            print(f"  {system:10} no run finished{failed_note}")
            continue
        shown = "; ".join(
            f"{f.label} {spread([f.of(r) for r in mine], f.digits)}{f.unit}" for f in figures
        )
        print(
            f"  {system:10} {shown}; exactly once after SIGKILL: "
            f"{sum(r.exactly_once for r in mine)}/{len(mine)}{failed_note}"
        )
    return report


def rows_ratio(report: Mapping[str, Summary]) -> float | None:
    """sparkherd's rows/s over Connect's, when both ran and finished runs."""
    rates = [report.get(s, {}).get("rows_per_s") for s in SYSTEMS]
    if not all(rates):
        return None
    return float(rates[1] or 0) / float(rates[0] or 1)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def spread(values: Sequence[float], digits: int) -> str:
    """Median [min-max]."""
    return (
        f"{statistics.median(values):,.{digits}f} "
        f"[{min(values):,.{digits}f}-{max(values):,.{digits}f}]"
    )


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, load {load}"
