"""Emulate a Kubernetes rolling restart of a real sparkherd cluster on loopback.

Like a StatefulSet rollout: pods in reverse ordinal order, SIGTERM to the worker process
(as kubelet does), wait for it to exit (grace, then SIGKILL), start it again, wait until
`/health` answers 200, then the next pod. While that happens, every live worker's
`/workers` and the connectors' statuses are sampled, and a report is printed per mode:

* eager      `connect.protocol=eager`: every rebalance stops every task.
* kip415     cooperative, but each pod comes back as a new worker (new address, no
             `group.instance.id`, as with a Deployment): KIP-415 keeps its tasks stopped
             until `scheduled.rebalance.max.delay.ms` expires.
* stable     cooperative with stable identities (StatefulSet: same address and
             `group.instance.id`): a pod gets its own tasks back as soon as it rejoins.

    python deploy/rolling_bounce.py                      # all three modes, 3 x 12 tasks
    python deploy/rolling_bounce.py --modes stable --tasks 4 --delay-ms 15000

It drives real processes: the development broker and `sparkherd worker`s with real Spark
(the same process harness as the integration tests, `tests/support`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.cluster import Cluster, generator_config, spread
from tests.support.file_sink import committed_column
from tests.support.polling import wait_until
from tests.support.processes import running_broker

MODES = {
    "eager": ["connect.protocol=eager"],
    "kip415": ["connect.protocol=compatible"],
    "stable": ["connect.protocol=compatible"],
}
SAMPLE_S = 0.5
GRACE_S = 30.0


@dataclass
class Observations:
    """What the sampler saw: downtime, generations, and tasks owned by two workers."""

    down_s: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    stops: Counter[str] = field(default_factory=Counter)
    generations: set[int] = field(default_factory=set)
    doubly_owned: set[str] = field(default_factory=set)
    """Tasks that two workers each said they own, in two samples in a row. Workers are
    asked one after another, so one sample can catch a task on its old owner and then on
    its new one while it moves; a real overlap lasts."""
    samples: int = 0
    failed_samples: int = 0


@dataclass(frozen=True)
class Report:
    mode: str
    rebalances: int
    stops_per_task: float
    downtime_s: float
    worst_task_downtime_s: float
    ran_twice: bool
    exactly_once: bool
    wall_s: float
    samples: int
    failed_samples: int


class Sampler:
    """Samples the cluster in the background while the bounce runs."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.seen = Observations()
        self._last_run: dict[str, str | None] = {}
        self._doubly_before: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        """A sample that fails (a worker mid-restart) is retried; its time goes to the
        next one, so downtime is never lost."""
        last = time.monotonic()
        while not self._stop.wait(SAMPLE_S):
            now = time.monotonic()
            try:
                self._sample(now - last)
            except Exception:
                self.seen.failed_samples += 1
                continue
            last = now

    def _sample(self, elapsed_s: float) -> None:
        alive = self._cluster.alive()
        owners: Counter[str] = Counter()
        for index, worker in enumerate(self._cluster.workers):
            if worker not in alive:
                continue
            try:
                view = self._cluster.workers_view(index)
            except httpx.HTTPError:
                continue
            self.seen.generations.add(int(view["generation"]))
            me = worker.url.removeprefix("http://")
            for entry in view["workers"]:
                if entry["id"] == me:
                    owners.update(entry["tasks"])
        doubly = {task for task, count in owners.items() if count > 1}
        self.seen.doubly_owned |= doubly & self._doubly_before
        self._doubly_before = doubly
        self.seen.samples += 1
        live = {w.url.removeprefix("http://") for w in alive}
        for task in self._cluster.tasks():
            name = f"{task.connector}-{task.task}"
            running = task.state == "RUNNING" and task.worker_id in live
            run = task.started_at if running else None
            if self._last_run.get(name) not in (None, run):
                self.seen.stops[name] += 1
            self._last_run[name] = run
            if not running:
                self.seen.down_s[name] += elapsed_s


def pods_in_rollout_order(size: int) -> Iterator[int]:
    """A StatefulSet rolls from the highest ordinal down."""
    return reversed(range(size))


def bounce_mode(
    bootstrap: str, root: Path, mode: str, workers: int, tasks: int, delay_ms: int
) -> Report:
    settings = [*MODES[mode], f"scheduled.rebalance.max.delay.ms={delay_ms}"]
    cluster = Cluster(bootstrap, root, size=workers, settings=settings)
    if mode == "stable":
        for index, worker in enumerate(cluster.workers):
            worker.extra = [*worker.extra, f"group.instance.id=sparkherd-{index}"]
    output = root / "out"
    with cluster.running():
        cluster.create("rollout", generator_config(output, tasks))
        cluster.wait_converged(tasks)
        started = time.monotonic()
        with Sampler(cluster) as sampler:
            for pod in pods_in_rollout_order(workers):
                cluster.workers[pod].stop(GRACE_S)
                cluster.restart(pod, new_identity=mode == "kip415").wait_ready(120)
            wait_until(
                lambda: _balanced(cluster, tasks), 600, interval_s=SAMPLE_S, what="convergence"
            )
            time.sleep(2 * SAMPLE_S)
        wall_s = time.monotonic() - started
    seen = sampler.seen
    return Report(
        mode=mode,
        rebalances=max(seen.generations) - min(seen.generations) if seen.generations else 0,
        stops_per_task=sum(seen.stops.values()) / tasks,
        downtime_s=sum(seen.down_s.values()),
        worst_task_downtime_s=max(seen.down_s.values(), default=0.0),
        ran_twice=bool(seen.doubly_owned),
        exactly_once=all(_exactly_once(output / f"task-{t}") for t in range(tasks)),
        wall_s=wall_s,
        samples=seen.samples,
        failed_samples=seen.failed_samples,
    )


def _balanced(cluster: Cluster, tasks: int) -> object:
    views = cluster.converged(tasks)
    return views if views is not None and spread(views) <= 1 else None


def _exactly_once(directory: Path) -> bool:
    seqs = committed_column(directory, "seq")
    return bool(seqs) and seqs == list(range(len(seqs)))


def print_reports(reports: list[Report], workers: int, tasks: int, delay_ms: int) -> None:
    print(
        f"\nrolling bounce of {workers} workers, {tasks} generator tasks, "
        f"scheduled.rebalance.max.delay.ms={delay_ms}"
    )
    header = (
        f"{'mode':>7} {'rebalances':>10} {'stops/task':>10} {'downtime task-s':>16} "
        f"{'worst task s':>12} {'ran twice':>9} {'exactly-once':>12} {'wall s':>7} "
        f"{'samples ok/failed':>17}"
    )
    print(header)
    for r in reports:
        print(
            f"{r.mode:>7} {r.rebalances:>10} {r.stops_per_task:>10.2f} {r.downtime_s:>16.1f} "
            f"{r.worst_task_downtime_s:>12.1f} {r.ran_twice!s:>9} {r.exactly_once!s:>12} "
            f"{r.wall_s:>7.1f} {f'{r.samples}/{r.failed_samples}':>17}"
        )
    print(
        "stops/task counts a task going from RUNNING to anything else; a task that is "
        "already down is not stopped again, so eager's figure is bounded by how fast its "
        "tasks come back between rounds."
    )


def main(argv: list[str] | None = None) -> list[Report]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="eager,kip415,stable")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--delay-ms", type=int, default=60_000)
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - MODES.keys()
    if unknown:
        parser.error(f"unknown mode(s) {sorted(unknown)}; choose from {sorted(MODES)}")
    reports = []
    with (
        tempfile.TemporaryDirectory(prefix="sparkherd-rollout-") as tmp,
        running_broker(Path(tmp)) as broker,
    ):
        for mode in modes:
            reports.append(
                bounce_mode(
                    broker.bootstrap_servers,
                    Path(tmp) / mode,
                    mode,
                    args.workers,
                    args.tasks,
                    args.delay_ms,
                )
            )
    print_reports(reports, args.workers, args.tasks, args.delay_ms)
    return reports


if __name__ == "__main__":
    main()
