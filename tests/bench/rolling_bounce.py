"""Emulate a Kubernetes rolling restart of a real sparkherd cluster on loopback.

Like a StatefulSet rollout: pods in reverse ordinal order, SIGTERM to the worker's main
process (as kubelet does), wait for it to exit (grace, then SIGKILL), start it again,
wait until `/health` answers 200, then the next pod. Each task's downtime is read from
its output: the longest gap between two consecutive committed batches of a `generator`
task that commits a batch about every second. Meanwhile every live worker's `/workers`
and the statuses are sampled (rebalances, task stops, a task on two workers). Modes,
each changing one thing from the one before; the first three without warm-up or
hand-off (`worker.warmup.enabled=false`, `task.handoff.timeout.ms=0`), as before them:

* eager      `connect.protocol=eager`: every rebalance stops every task.
* kip415     cooperative, but each pod comes back as a new worker (new address, no
             `group.instance.id`, as with a Deployment): KIP-415 keeps its tasks stopped
             until `scheduled.rebalance.max.delay.ms` expires.
* stable     cooperative with stable identities (StatefulSet: same address and
             `group.instance.id`), without warm-up or hand-off: a pod stops its tasks on
             SIGTERM and gets them back once it has rejoined and started Spark.
* handoff    stable identities with the defaults: a worker starts Spark before it joins,
             and on SIGTERM hands its tasks to the other workers before it stops.

    python -m tests.bench.rolling_bounce                      # all four modes, 3 x 6 tasks
    python -m tests.bench.rolling_bounce --modes stable,handoff --tasks 4 --delay-ms 15000
    python -m tests.bench.rolling_bounce --modes handoff --keep /tmp/rollout   # keeps the logs

It drives real processes: Apache Kafka on a free loopback port and `sparkherd worker`s
with real Spark (the harness of the integration tests, `tests/support`; the measurement
is `tests/support/bounce.py`, the one `tests/integration/test_rolling_bounce.py` asserts
on).
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.bench.result_file import ResultFile, add_json_option
from tests.support.bounce import (
    BATCH_INTERVAL_MS,
    SAMPLE_S,
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
from tests.support.cluster import Cluster, spread
from tests.support.polling import wait_until
from tests.support.processes import running_broker


@dataclass(frozen=True)
class Mode:
    settings: tuple[str, ...]
    stable_identity: bool
    """Each worker has a `group.instance.id` (a StatefulSet's pod name)."""
    new_address: bool = False
    """A restarted worker gets a new REST address, so a new worker id (a Deployment)."""


TODAY = ("worker.warmup.enabled=false", "task.handoff.timeout.ms=0")
"""Neither warm-up nor hand-off: Spark starts at a worker's first task, and SIGTERM stops
the tasks before the worker leaves."""

MODES = {
    "eager": Mode(("connect.protocol=eager", *TODAY), stable_identity=False),
    "kip415": Mode(
        ("connect.protocol=compatible", *TODAY), stable_identity=False, new_address=True
    ),
    "stable": Mode(("connect.protocol=compatible", *TODAY), stable_identity=True),
    "handoff": Mode(("connect.protocol=compatible",), stable_identity=True),
}
"""A ladder: each mode changes one thing from the one before, the last turns on warm-up
and hand-off (the defaults)."""
GRACE_S = 60.0
"""The StatefulSet's `terminationGracePeriodSeconds`."""
CONNECTOR = "rollout"


@dataclass(frozen=True)
class Report:
    mode: str
    rebalances: int
    stops_per_task: float
    restarts: tuple[Restart, ...]
    outputs: tuple[TaskOutput, ...]
    since: float
    """When the first SIGTERM went out (epoch seconds): gaps ending after it count."""
    ran_twice: bool
    wall_s: float
    samples: int
    failed_samples: int

    @property
    def longest_gaps_s(self) -> list[float]:
        """Per task: the longest gap between two of its committed batches in the bounce."""
        return [o.longest_gap(self.since).seconds for o in self.outputs]

    @property
    def usual_gap_s(self) -> float:
        """The median gap of every task over the bounce: the batch cadence."""
        gaps = [g.seconds for o in self.outputs for g in o.gaps(self.since)]
        return median_max(gaps)[0]

    @property
    def exactly_once(self) -> bool:
        return bool(self.outputs) and all(o.exactly_once for o in self.outputs)

    def figures(self) -> dict[str, Any]:
        """What the report prints of this mode, for its result file."""
        return {
            "mode": self.mode,
            "rebalances": self.rebalances,
            "stops_per_task": self.stops_per_task,
            "restarts": [asdict(restart) for restart in self.restarts],
            "longest_gap_s_per_task": self.longest_gaps_s,
            "usual_gap_s": self.usual_gap_s,
            "ran_on_two_workers": self.ran_twice,
            "every_seq_once": self.exactly_once,
            "wall_s": self.wall_s,
            "samples": self.samples,
            "failed_samples": self.failed_samples,
        }


def pods_in_rollout_order(size: int) -> Iterator[int]:
    """A StatefulSet rolls from the highest ordinal down."""
    return reversed(range(size))


def bounce_mode(
    bootstrap: str, root: Path, mode: str, workers: int, tasks: int, delay_ms: int
) -> Report:
    chosen = MODES[mode]
    settings = [*chosen.settings, f"scheduled.rebalance.max.delay.ms={delay_ms}"]
    cluster = Cluster(bootstrap, root, size=workers, settings=settings)
    if chosen.stable_identity:
        for index, worker in enumerate(cluster.workers):
            worker.extra = [*worker.extra, f"group.instance.id=sparkherd-{index}"]
    output = root / "out"
    with cluster.running():
        cluster.create(CONNECTOR, steady_generator_config(output, tasks))
        cluster.wait_converged(tasks)
        wait_for_batches_after(output, tasks, time.time(), 120)
        started = time.monotonic()
        since = time.time()
        restarts = []
        with OwnershipSampler(cluster) as sampler:
            for pod in pods_in_rollout_order(workers):
                restarts.append(restart_in_place(cluster, pod, GRACE_S, chosen.new_address))
            wait_until(
                lambda: _balanced(cluster, tasks), 600, interval_s=SAMPLE_S, what="convergence"
            )
            # Every task commits once more after the group is balanced: no gap stays open.
            wait_for_batches_after(output, tasks, time.time(), 120)
        wall_s = time.monotonic() - started
    seen = sampler.seen
    return Report(
        mode=mode,
        rebalances=seen.rebalances,
        stops_per_task=sum(seen.stops.values()) / tasks,
        restarts=tuple(restarts),
        outputs=tuple(read_outputs(output, tasks)),
        since=since,
        ran_twice=bool(seen.doubly_owned),
        wall_s=wall_s,
        samples=seen.samples,
        failed_samples=seen.failed_samples,
    )


def _balanced(cluster: Cluster, tasks: int) -> object:
    views = cluster.converged(tasks)
    return views if views is not None and spread(views) <= 1 else None


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def print_reports(reports: list[Report], workers: int, tasks: int, delay_ms: int) -> None:
    print(
        f"\nrolling bounce of {workers} workers, {tasks} generator tasks "
        f"(a batch every {BATCH_INTERVAL_MS} ms), scheduled.rebalance.max.delay.ms={delay_ms}, "
        f"grace {GRACE_S:g} s\n"
    )
    print(
        "| mode | rebalances | stops per task | worker restart s (median / max) "
        "| longest gap s, median task | longest gap s, worst task | usual gap s "
        "| ran on two workers | every `seq` once |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for r in reports:
        restart_med, restart_max = median_max([x.restart_s for x in r.restarts])
        gap_med, gap_max = median_max(r.longest_gaps_s)
        print(
            f"| {r.mode} | {r.rebalances} | {r.stops_per_task:.2f} "
            f"| {restart_med:.1f} / {restart_max:.1f} | {gap_med:.1f} | {gap_max:.1f} "
            f"| {r.usual_gap_s:.1f} | {_yes(r.ran_twice)} | {_yes(r.exactly_once)} |"
        )
    print(
        "\nlongest gap: between two consecutive committed batches of a task, from the `ts` "
        "its rows carry, over the rollout; usual gap: the median of all gaps (the cadence); "
        "worker restart: SIGTERM to /health 200 of the new process."
    )
    print("\nlongest gap per task, s\n")
    print(gap_table(CONNECTOR, {r.mode: r.longest_gaps_s for r in reports}))
    print("\nper worker: SIGTERM to exit / to /health 200, s (exit code)\n")
    for r in reports:
        print(
            f"{r.mode}: {restarts_line(r.restarts)}; wall {r.wall_s:.0f} s, samples {r.samples} "
            f"({r.failed_samples} failed)"
        )
    print("\nsettings per mode, beside the group's own:")
    for r in reports:
        mode = MODES[r.mode]
        identity = "group.instance.id, same address" if mode.stable_identity else "no identity"
        if mode.new_address:
            identity = "no identity, new address per restart"
        print(f"  {r.mode}: {', '.join(mode.settings)}; {identity}")


def main(argv: list[str] | None = None) -> list[Report]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--delay-ms", type=int, default=60_000)
    parser.add_argument(
        "--keep",
        type=Path,
        help="run in this directory and keep it: the workers' logs, checkpoints and output",
    )
    add_json_option(parser)
    args = parser.parse_args(argv)
    result = ResultFile(__file__, args, argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - MODES.keys()
    if unknown:
        parser.error(f"unknown mode(s) {sorted(unknown)}; choose from {sorted(MODES)}")
    reports = []
    with contextlib.ExitStack() as stack:
        root = args.keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="sparkherd-rollout-"))
        )
        broker = stack.enter_context(running_broker(root))
        for mode in modes:
            reports.append(
                bounce_mode(
                    broker.bootstrap_servers,
                    root / mode,
                    mode,
                    args.workers,
                    args.tasks,
                    args.delay_ms,
                )
            )
    print_reports(reports, args.workers, args.tasks, args.delay_ms)
    result.write(
        {"modes": [report.figures() for report in reports]},
        {"grace_s": GRACE_S, "mode_settings": {m: list(MODES[m].settings) for m in modes}},
    )
    return reports


if __name__ == "__main__":
    main()
