"""Eager vs cooperative on a real cluster: what a join, a bounce and a leave cost.

For each protocol one cluster lives through the same history: two workers run all the
tasks, a third joins, one worker is bounced (SIGTERM, restart under the same identity),
then one leaves for good (SIGTERM, not restarted). For each event it prints the
rebalance rounds (generations), the wall time until every task runs again on a live
worker (and, after the join, until the work is balanced), how many running tasks were
stopped, and the total task downtime: the seconds, summed over tasks, in which the status
topic did not show the task RUNNING on a live worker.

    python -m tests.bench.cluster_rebalance            # 3 workers, 30 tasks
    python -m tests.bench.cluster_rebalance --quick    # 6 tasks, short delay (CI-sized)
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tests.bench.result_file import ResultFile, add_json_option
from tests.support.cluster import Cluster, TaskView, generator_config, spread
from tests.support.polling import wait_until
from tests.support.processes import running_broker

POLL_S = 0.5


@dataclass
class DowntimeMeter:
    """Samples the statuses in the background and sums the time each task was down."""

    cluster: Cluster
    down_s: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> DowntimeMeter:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _sample(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(POLL_S):
            try:
                live = {w.url.removeprefix("http://") for w in self.cluster.alive()}
                views = self.cluster.tasks()
            except Exception:
                continue
            now = time.monotonic()
            down = sum(1 for v in views if v.state != "RUNNING" or v.worker_id not in live)
            self.down_s += down * (now - last)
            last = now


@dataclass(frozen=True)
class EventCost:
    event: str
    rounds: int
    converge_s: float
    stopped: int
    downtime_s: float


def generation(cluster: Cluster) -> int:
    return int(cluster.workers_view(cluster.workers.index(cluster.alive()[0]))["generation"])


def balanced(cluster: Cluster, tasks: int) -> list[TaskView] | None:
    views = cluster.converged(tasks)
    return views if views is not None and spread(views) <= 1 else None


def measure(cluster: Cluster, tasks: int, event: str, act: Callable[[], object]) -> EventCost:
    before = {(v.connector, v.task): v.started_at for v in cluster.wait_converged(tasks)}
    first_generation = generation(cluster)
    started = time.monotonic()
    with DowntimeMeter(cluster) as meter:
        act()
        views = wait_until(lambda: balanced(cluster, tasks), 600, interval_s=0.5, what=event)
    converge_s = time.monotonic() - started
    stopped = sum(1 for v in views if before.get((v.connector, v.task)) != v.started_at)
    return EventCost(
        event, generation(cluster) - first_generation, converge_s, stopped, meter.down_s
    )


def run_history(
    bootstrap: str, root: Path, protocol: str, tasks: int, delay_ms: int
) -> list[EventCost]:
    cluster = Cluster(
        bootstrap,
        root,
        size=2,
        settings=[f"connect.protocol={protocol}", f"scheduled.rebalance.max.delay.ms={delay_ms}"],
    )
    with cluster.running():
        per_connector = tasks // 3
        for name in ("alpha", "beta", "gamma"):
            config = generator_config(root / "out" / name, per_connector)
            cluster.create(name, {**config, "batch.interval.ms": "5000"})
        total = per_connector * 3

        def join() -> None:
            cluster.add_worker().wait_ready(120)

        def bounce() -> None:
            cluster.workers[1].stop()
            cluster.restart(1).wait_ready(120)

        def leave() -> None:
            cluster.workers[2].stop()

        return [
            measure(cluster, total, "join", join),
            measure(cluster, total, "bounce", bounce),
            measure(cluster, total, "leave", leave),
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6 tasks, 5 s delay")
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    tasks, delay_ms = (6, 5_000) if args.quick else (30, 20_000)
    results: dict[str, list[EventCost]] = {}
    with tempfile.TemporaryDirectory(prefix="sparkherd-bench-") as tmp:
        root = Path(tmp)
        with running_broker(root) as broker:
            for protocol in ("eager", "compatible"):
                results[protocol] = run_history(
                    broker.bootstrap_servers, root / protocol, protocol, tasks, delay_ms
                )
    print(f"\n3 workers, {tasks} generator tasks, scheduled.rebalance.max.delay.ms={delay_ms}")
    print(
        f"{'protocol':>11} {'event':>7} {'rounds':>7} {'converge s':>11} "
        f"{'tasks stopped':>14} {'downtime task-s':>16}"
    )
    for protocol, costs in results.items():
        for cost in costs:
            print(
                f"{protocol:>11} {cost.event:>7} {cost.rounds:>7} {cost.converge_s:>11.1f} "
                f"{cost.stopped:>14} {cost.downtime_s:>16.1f}"
            )
    result.write(
        {protocol: [asdict(cost) for cost in costs] for protocol, costs in results.items()},
        {"workers": 3, "tasks": tasks, "delay_ms": delay_ms},
    )


if __name__ == "__main__":
    main()
