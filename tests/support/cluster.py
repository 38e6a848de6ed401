"""A cluster of real worker processes on loopback, and what the tests read from it."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port


def generator_config(
    output: Path, tasks: int, rate: int = 5, interval_ms: int = 3000
) -> dict[str, str]:
    """Slow batches by default: three Spark drivers share two cores in these tests."""
    return {
        "connector.class": "generator",
        "tasks.max": str(tasks),
        "rows.per.second": str(rate),
        "batch.interval.ms": str(interval_ms),
        "output.path": str(output),
    }


@dataclass(frozen=True)
class TaskView:
    connector: str
    task: int
    state: str
    worker_id: str | None
    started_at: str | None


def task_key(task_id: str) -> tuple[str, int]:
    """A task as `/workers` names it (`alpha-3`) -> ("alpha", 3), as a `TaskView` holds it."""
    connector, _, index = task_id.rpartition("-")
    return connector, int(index)


@dataclass(frozen=True)
class GroupLook:
    """One look at a group: what each live worker says of itself on `/workers` (the
    generation it last joined, its scheduled-rebalance countdown, the tasks it runs),
    beside what the status topic says (the task views)."""

    generations: dict[str, int]
    pending_ms: dict[str, int]
    owners: dict[tuple[str, int], str]
    views: tuple[TaskView, ...]

    def restless(self, expected_tasks: int) -> str | None:
        """Why this look is not of a group at rest; None when it is.

        The status topic alone cannot tell: a revoked task stays RUNNING there on its old
        worker until its Spark query has stopped (letting a batch in flight finish), so
        between a balancing revocation and the hand-off every task can read RUNNING, in the
        layout from before the rebalance. A worker's own account drops a revoked task at
        once and lists an assigned one before it runs, so the two agree only at rest.
        """
        if len(set(self.generations.values())) > 1:
            return f"workers in different generations {self.generations}"
        pending = {worker: ms for worker, ms in self.pending_ms.items() if ms > 0}
        if pending:
            return f"scheduled rebalance pending (ms) {pending}"
        running = {(v.connector, v.task): v.worker_id for v in self.views if v.state == "RUNNING"}
        if len(self.views) != expected_tasks or len(running) != expected_tasks:
            return f"{len(running)} of {expected_tasks} tasks RUNNING"
        if running != self.owners:
            moving = sorted(
                f"{c}-{t}: status {running.get((c, t))}, run by {self.owners.get((c, t))}"
                for c, t in running.keys() | self.owners.keys()
                if running.get((c, t)) != self.owners.get((c, t))
            )
            return f"tasks in transit {moving}"
        return None


@dataclass
class Cluster:
    """N workers of one group sharing one checkpoint root, started and always killed."""

    bootstrap_servers: str
    root: Path
    size: int
    settings: Sequence[str] = ()
    workers: list[WorkerProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._group = [f"group.id=cluster-{free_port()}", *self.settings]
        for _ in range(self.size):
            self._new_worker()

    def _new_worker(self) -> WorkerProcess:
        worker = WorkerProcess(
            f"worker-{len(self.workers)}",
            self.bootstrap_servers,
            self.root / "checkpoints",
            self.root / "logs",
            extra=self._group,
        )
        self.workers.append(worker)
        return worker

    def add_worker(self) -> WorkerProcess:
        """One more member of the group, started (a scale-up)."""
        return self._new_worker().start()

    @contextlib.contextmanager
    def running(self) -> Iterator[Cluster]:
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        try:
            for worker in self.workers:
                worker.start()
            for worker in self.workers:
                worker.wait_ready(120)
            yield self
        finally:
            for worker in self.workers:
                worker.kill()

    def restart(
        self, index: int, settings: Sequence[str] = (), new_identity: bool = False
    ) -> WorkerProcess:
        """A new process for worker `index`, with the same identity (REST port) unless
        `new_identity` (a pod without a stable address); `settings` override its earlier
        ones (a changed `connect.protocol`, say)."""
        old = self.workers[index]
        old.kill()
        new = WorkerProcess(
            old.name,
            old.bootstrap_servers,
            old.checkpoint_root,
            old.log_dir,
            extra=[*old.extra, *settings],
            rest_port=free_port() if new_identity else old.rest_port,
        ).start()
        self.workers[index] = new
        return new

    def index_of(self, url: str) -> int:
        """The index of the worker whose REST URL is `url` (a `/workers` leader, say)."""
        return next(i for i, worker in enumerate(self.workers) if worker.url == url)

    def alive(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.process is not None and w.process.poll() is None]

    def url(self) -> str:
        return self.alive()[0].url

    def create(self, name: str, config: dict[str, str]) -> None:
        response = httpx.post(
            f"{self.url()}/connectors", json={"name": name, "config": config}, timeout=60
        )
        assert response.status_code == 201, response.text

    def read(self, path: str) -> Any:
        """GET from the first live worker that answers (one may be restarting)."""
        error: httpx.HTTPError | None = None
        for worker in self.alive():
            try:
                response = httpx.get(f"{worker.url}{path}", timeout=10)
            except httpx.HTTPError as exc:
                error = exc
                continue
            response.raise_for_status()
            return response.json()
        raise error or httpx.ConnectError(f"no live worker to ask for {path}")

    def tasks(self) -> list[TaskView]:
        views = []
        for name in self.read("/connectors"):
            status = self.read(f"/connectors/{name}/status")
            views += [
                TaskView(name, t["id"], t["state"], t["worker_id"], t.get("started_at"))
                for t in status["tasks"]
            ]
        return views

    def converged(self, expected_tasks: int) -> list[TaskView] | None:
        """The task views once every task runs on a live worker, else None."""
        live = {w.url.removeprefix("http://") for w in self.alive()}
        views = self.tasks()
        if len(views) == expected_tasks and all(
            v.state == "RUNNING" and v.worker_id in live for v in views
        ):
            return views
        return None

    def wait_converged(self, expected_tasks: int, timeout_s: float = 180) -> list[TaskView]:
        try:
            result: list[TaskView] = wait_until(
                lambda: self.converged(expected_tasks), timeout_s, interval_s=1, what="convergence"
            )
        except AssertionError as exc:
            live = [w.url for w in self.alive()]
            print(self.herder_history())
            raise AssertionError(f"{exc}; live workers {live}; tasks {self.tasks()}") from None
        return result

    def look(self) -> GroupLook:
        """Each live worker's `/workers` (each speaks only for itself), then the statuses."""
        generations: dict[str, int] = {}
        pending_ms: dict[str, int] = {}
        owners: dict[tuple[str, int], str] = {}
        for worker in self.alive():
            me = worker.url.removeprefix("http://")
            body = httpx.get(f"{worker.url}/workers", timeout=10).json()
            generations[me] = body["generation"]
            pending_ms[me] = body["scheduled_rebalance_ms"]
            mine: list[str] = next((w["tasks"] for w in body["workers"] if w["id"] == me), [])
            owners.update(dict.fromkeys(map(task_key, mine), me))
        return GroupLook(generations, pending_ms, owners, tuple(self.tasks()))

    def wait_at_rest(self, expected_tasks: int, timeout_s: float = 180) -> list[TaskView]:
        """The task views once the group is at rest: judge balance on these.

        `wait_converged` returns the first look in which every task runs on a live worker,
        which can be a layout still being rebalanced (see `GroupLook.restless`). At rest:
        `restless` finds nothing, in two looks in a row that are the same, and in a
        generation for which no worker has shown a scheduled rebalance: when the countdown
        ends it reads 0 while the leader is still starting the next generation.
        """
        due: set[int] = set()
        previous: list[GroupLook] = []
        problem = "nothing: the group was never looked at"

        def at_rest() -> list[TaskView] | None:
            nonlocal problem
            look = self.look()
            due.update(g for w, g in look.generations.items() if look.pending_ms[w] > 0)
            reason = look.restless(expected_tasks)
            if reason is None and due & set(look.generations.values()):
                reason = "a scheduled rebalance is due after this generation"
            elif reason is None and previous != [look]:
                reason = "at rest in one look; looking again"
            previous[:] = [look]
            if reason is None:
                return list(look.views)
            problem = f"{reason}; tasks {list(look.views)}"
            return None

        try:
            views: list[TaskView] = wait_until(
                at_rest, timeout_s, interval_s=1, what="the group to come to rest"
            )
        except AssertionError as exc:
            print(self.herder_history())
            raise AssertionError(f"{exc}; last look: {problem}") from None
        return views

    def herder_history(self, lines: int = 40) -> str:
        """The last rebalances each worker saw, for a failure's report: CI keeps the test
        output but not the worker logs."""
        parts = []
        for worker in self.workers:
            kept = [
                line
                for line in worker.log_text().splitlines()
                if " herder." in line or "Task " in line
            ]
            parts.append(f"--- {worker.name} ({worker.url})\n" + "\n".join(kept[-lines:]))
        return "\n".join(parts)

    def workers_view(self, index: int = 0) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.workers[index].url}/workers", timeout=10).json()
        return body


def spread(views: Sequence[TaskView]) -> int:
    """max - min of the tasks per worker."""
    counts = Counter(v.worker_id for v in views)
    return max(counts.values()) - min(counts.values())


def spread_per_connector(views: Sequence[TaskView], workers: int) -> int:
    """The largest max - min of one connector's tasks per worker (workers with none count 0)."""
    worst = 0
    for connector in {v.connector for v in views}:
        counts = Counter(v.worker_id for v in views if v.connector == connector)
        values = list(counts.values()) + [0] * (workers - len(counts))
        worst = max(worst, max(values) - min(values))
    return worst


def start_times(views: Sequence[TaskView]) -> dict[tuple[str, int], str | None]:
    return {(v.connector, v.task): v.started_at for v in views}


@contextmanager
def worker_pair(
    broker: EmbeddedBroker,
    root: Path,
    settings: list[str],
    auth: httpx.Auth | Callable[[httpx.Request], httpx.Request] | None = None,
    tls_ca: Path | None = None,
    timeout_s: float = 120,
) -> Iterator[tuple[WorkerProcess, WorkerProcess, str, WorkerProcess]]:
    """Two ready workers of one group: (first, second, the leader's URL, the follower)."""
    first, second = (
        WorkerProcess(
            name, broker.bootstrap_servers, root / "checkpoints", root, settings, tls_ca=tls_ca
        ).start()
        for name in ("first", "second")
    )
    try:
        for process in (first, second):
            process.wait_ready(timeout_s)
        leader: str = wait_until(
            lambda: httpx.get(
                f"{first.url}/workers", auth=auth, timeout=5, verify=first.verify
            ).json()["leader"],
            timeout_s,
            what="a leader",
        )
        yield first, second, leader, second if leader == first.url else first
    finally:
        first.kill()
        second.kill()
