"""A rolling bounce of a real cluster, and what it cost: shared by the integration test
and `deploy/rolling_bounce.py`, so both measure the same way.

* What the data says (`TaskOutput`): a `generator` task writes rows `(task, seq, ts)`;
  every row of one micro-batch carries the batch's processing time `ts`, so the distinct
  `ts` values of a task's committed output are its batches. A task's downtime is the
  longest gap between two consecutive committed batches: it is what a reader of the
  output sees, whatever the statuses said. Exactly-once is every `seq` from 0 once.
* What the workers say (`OwnershipSampler`): each live worker's `/workers` and the
  statuses, sampled in the background: generations, task stops, and tasks that two
  workers each said they run.
* The bounce step (`restart_in_place`): SIGTERM to the worker's main process only (as
  kubelet sends it), wait for its exit, start it again, wait for `/health` 200.
"""

from __future__ import annotations

import itertools
import math
import statistics
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tests.support.cluster import Cluster
from tests.support.file_sink import committed_files
from tests.support.polling import wait_until

# --- what the data says -----------------------------------------------------------------

BATCH_INTERVAL_MS = 1000
ROWS_PER_SECOND = 10


def steady_generator_config(output: Path, tasks: int) -> dict[str, str]:
    """A generator that commits a batch about every second, so that a gap of a few
    seconds stands out of its cadence."""
    return {
        "connector.class": "generator",
        "tasks.max": str(tasks),
        "rows.per.second": str(ROWS_PER_SECOND),
        "batch.interval.ms": str(BATCH_INTERVAL_MS),
        "output.path": str(output),
    }


@dataclass(frozen=True)
class Gap:
    """Between two consecutive committed batches, by their `ts` (seconds since the epoch)."""

    after: float
    before: float

    @property
    def seconds(self) -> float:
        return self.before - self.after


NO_GAP = Gap(0.0, 0.0)


@dataclass(frozen=True)
class TaskOutput:
    """One generator task's committed output: its `seq` values and its batches' times."""

    task: int
    seqs: tuple[int, ...]
    """Sorted."""
    batch_times: tuple[float, ...]
    """One per committed batch, sorted: the `ts` every row of that batch carries (Spark's
    batch timestamp, when the batch was planned)."""

    @property
    def exactly_once(self) -> bool:
        """Every `seq` from 0 on, each once, none missing."""
        return bool(self.seqs) and self.seqs == tuple(range(len(self.seqs)))

    def gaps(self, since: float = -math.inf) -> list[Gap]:
        """Gaps between consecutive batches whose later batch came after `since` (a gap
        that began before `since` and ended after it counts)."""
        times = self.batch_times
        return [Gap(a, b) for a, b in itertools.pairwise(times) if b > since]

    def longest_gap(self, since: float = -math.inf) -> Gap:
        return max(self.gaps(since), key=lambda gap: gap.seconds, default=NO_GAP)

    def batches_after(self, moment: float) -> int:
        return sum(1 for t in self.batch_times if t > moment)


def read_task_output(directory: Path, task: int) -> TaskOutput:
    """What Spark's file sink committed under `directory` (a task's output directory).

    Read it after the task's workers are stopped for a final figure: the sink compacts
    its metadata log while it runs, and a file listed a moment ago may be gone (polling
    through `wait_until` treats that `OSError` as "not yet")."""
    seqs: list[int] = []
    times: set[float] = set()
    for path in committed_files(directory):
        table = pq.read_table(path, columns=["seq", "ts"])
        seqs.extend(table.column("seq").to_pylist())
        micros = pc.cast(pc.cast(table.column("ts"), pa.timestamp("us")), pa.int64())
        times.update(us / 1e6 for us in micros.to_pylist())
    return TaskOutput(task, tuple(sorted(seqs)), tuple(sorted(times)))


def read_outputs(output: Path, tasks: int) -> list[TaskOutput]:
    """Every task of one generator connector whose `output.path` is `output`."""
    return [read_task_output(output / f"task-{task}", task) for task in range(tasks)]


def wait_for_batches_after(output: Path, tasks: int, moment: float, timeout_s: float) -> None:
    """Until every task has committed a batch that began after `moment` (epoch seconds):
    then each task's gaps up to `moment` are closed, and none can be longer than measured."""
    wait_until(
        lambda: {o.task: o.batches_after(moment) for o in read_outputs(output, tasks)},
        timeout_s,
        interval_s=1,
        what=f"every task to commit a batch after {moment:.1f}",
        until=lambda counts: all(counts.values()),
    )


# --- what the workers say ---------------------------------------------------------------

SAMPLE_S = 0.5


@dataclass
class Ownership:
    """What the sampler saw."""

    stops: Counter[str] = field(default_factory=Counter)
    """Per task (`connector-n`): how often it went from RUNNING (one `started_at`) to
    anything else; a task already down is not stopped again."""
    generations: set[int] = field(default_factory=set)
    doubly_owned: set[str] = field(default_factory=set)
    """Tasks that two workers each said they run, in two samples in a row. Workers are
    asked one after another, so one sample can catch a task on its old owner and then on
    its new one while it moves; a real overlap lasts."""
    samples: int = 0
    failed_samples: int = 0

    @property
    def rebalances(self) -> int:
        return max(self.generations) - min(self.generations) if self.generations else 0


class OwnershipSampler:
    """Samples the cluster in the background while a bounce runs (a context manager)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.seen = Ownership()
        self._last_run: dict[str, str | None] = {}
        self._doubly_before: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> OwnershipSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            try:
                self._sample()
            except Exception:  # a worker mid-restart, a status not written yet: next sample
                self.seen.failed_samples += 1

    def _sample(self) -> None:
        alive = self._cluster.alive()
        owners: Counter[str] = Counter()
        for worker in alive:
            try:
                view = httpx.get(f"{worker.url}/workers", timeout=10).json()
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
        live = {w.url.removeprefix("http://") for w in alive}
        for task in self._cluster.tasks():
            name = f"{task.connector}-{task.task}"
            running = task.state == "RUNNING" and task.worker_id in live
            run = task.started_at if running else None
            if self._last_run.get(name) not in (None, run):
                self.seen.stops[name] += 1
            self._last_run[name] = run
        self.seen.samples += 1


# --- the bounce step --------------------------------------------------------------------


@dataclass(frozen=True)
class Restart:
    """One worker bounced: seconds from SIGTERM to its exit, and to `/health` 200 again."""

    worker: str
    exit_code: int | None
    """None: it outlived the grace period and was killed."""
    exit_s: float
    restart_s: float


def restart_in_place(
    cluster: Cluster,
    index: int,
    grace_s: float,
    new_identity: bool = False,
    ready_timeout_s: float = 180,
) -> Restart:
    """SIGTERM to worker `index`'s main process alone (its Spark JVM gets nothing from
    us, as in a pod), wait up to `grace_s` for it to exit (then SIGKILL what is left),
    start it again (same REST address and settings, so the same `group.instance.id` if
    it has one, unless `new_identity`), and wait for its `/health` to answer 200."""
    worker = cluster.workers[index]
    signalled = time.monotonic()
    exit_code = worker.stop(grace_s)
    exited = time.monotonic()
    back = cluster.restart(index, new_identity=new_identity)
    wait_until(
        lambda: httpx.get(f"{back.url}/health", timeout=2).status_code,
        ready_timeout_s,
        interval_s=0.1,
        what=f"{back.name} to answer /health with 200 after its restart",
        until=lambda status: status == 200,
    )
    return Restart(worker.name, exit_code, exited - signalled, time.monotonic() - signalled)


def median_max(values: Sequence[float]) -> tuple[float, float]:
    return (statistics.median(values), max(values)) if values else (0.0, 0.0)


# --- the report -------------------------------------------------------------------------


def gap_table(connector: str, longest_gaps_s: Mapping[str, Sequence[float]]) -> str:
    """Markdown: one row a task, one column a run, its longest gap in seconds."""
    lines = [
        "| task | " + " | ".join(longest_gaps_s) + " |",
        "| --- |" + " ---: |" * len(longest_gaps_s),
    ]
    for task, gaps in enumerate(zip(*longest_gaps_s.values(), strict=True)):
        lines.append(f"| {connector}-{task} | " + " | ".join(f"{g:.1f}" for g in gaps) + " |")
    return "\n".join(lines)


def restarts_line(restarts: Sequence[Restart]) -> str:
    """Each worker's SIGTERM to exit / to `/health` 200, in seconds, and its exit code."""
    return ", ".join(
        f"{x.worker} {x.exit_s:.1f} / {x.restart_s:.1f} ({x.exit_code})" for x in restarts
    )
