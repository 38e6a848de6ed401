"""Fencing: a worker cut off from the coordinator stops its tasks on its own before the
group could hand them on (Kafka's KAFKA-9184), and a zombie that missed all that (frozen,
then resumed) is fenced by the newer owner's claim on the task's checkpoint."""

from __future__ import annotations

import signal
import time
from functools import partial
from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster, TaskView, generator_config
from tests.support.file_sink import committed_column, committed_files
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, running_broker
from worker.plugins.task_claims import CLAIMS_DIR

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_S = 8


def test_worker_without_coordinator_stops_its_tasks_before_the_session_expires(
    tmp_path: Path, logs_dir: Path
) -> None:
    output = tmp_path / "out"
    with running_broker(logs_dir) as broker:
        worker = WorkerProcess(
            "fenced",
            broker.bootstrap_servers,
            tmp_path / "ck",
            logs_dir,
            [f"session.timeout.ms={SESSION_TIMEOUT_S * 1000}", "heartbeat.interval.ms=1000"],
        )
        try:
            worker.start().wait_ready()
            config = {
                "connector.class": "generator",
                "tasks.max": "1",
                "rows.per.second": "20",
                "batch.interval.ms": "500",
                "output.path": str(output),
            }
            created = httpx.post(
                f"{worker.url}/connectors", json={"name": "gen", "config": config}, timeout=30
            )
            assert created.status_code == 201, created.text
            wait_until(lambda: len(committed_files(output / "task-0")) >= 2, 120, what="batches")

            broker.stop()
            cut_off_at = time.monotonic()
            wait_until(lambda: "fencing myself" in worker.log_text(), 30, what="fencing")
            fenced_after_s = time.monotonic() - cut_off_at
            assert fenced_after_s < SESSION_TIMEOUT_S, fenced_after_s
            # A stop lets the batch in flight commit: the count is settled once it returned.
            wait_until(lambda: "fenced myself" in worker.log_text(), 60, what="the stop")
            worker.wait_tasks_stopped(["gen-0"], 0, 60)
            settled = len(committed_files(output / "task-0"))
            assert worker.process is not None and worker.process.poll() is None
            assert len(committed_files(output / "task-0")) == settled, "still writing"
            assert worker.process is not None and worker.process.poll() is None
        finally:
            worker.signal(signal.SIGKILL)
            worker.kill()


ZOMBIE_STOPPED = (
    "was fenced",
    "ConcurrentModificationException",
    "lost group membership",
    "another worker has claimed",
)
"""How a thawed zombie says it stopped its query: fenced by its monitor or Spark, stopped
with all its work, or given up before its next JoinGroup (`LocalWork.give_up_lost`)."""


def test_a_frozen_worker_resumes_as_a_zombie_and_is_fenced(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    output = tmp_path / "out"
    cluster = Cluster(
        broker.bootstrap_servers,
        tmp_path,
        size=2,
        settings=[
            "scheduled.rebalance.max.delay.ms=4000",
            f"session.timeout.ms={SESSION_TIMEOUT_S * 1000}",
            "heartbeat.interval.ms=1000",
        ],
    )
    with cluster.running():
        cluster.create("herd", {**generator_config(output, tasks=2), "batch.interval.ms": "1000"})
        views = cluster.wait_converged(2)
        zombie = cluster.workers[1]
        zombie_id = zombie.url.removeprefix("http://")
        [moved] = [v.task for v in views if v.worker_id == zombie_id]

        zombie.signal_every_process(signal.SIGSTOP)
        views = wait_until(
            partial(cluster.converged, 2),
            120,
            what="the frozen worker's task to move",
            until=lambda converged: all(t.worker_id != zombie_id for t in converged),
        )
        moved_output = output / f"task-{moved}"
        taken_over_at = len(committed_files(moved_output))
        wait_until(
            lambda: len(committed_files(moved_output)) >= taken_over_at + 2, 60, what="batches"
        )

        seen_by_zombie = len(zombie.log_text())
        zombie.signal_every_process(signal.SIGCONT)
        resumed_at = time.monotonic()
        how = wait_until(
            lambda: next(
                (m for m in ZOMBIE_STOPPED if m in zombie.log_text()[seen_by_zombie:]), None
            ),
            60,
            what="the zombie to stop its query",
        )
        print(f"zombie stopped ({how}) {time.monotonic() - resumed_at:.1f} s after SIGCONT")
        states_meanwhile: list[TaskView] = []

        def settled() -> list[TaskView] | None:
            states_meanwhile.extend(cluster.tasks())
            return cluster.converged(2)

        views = wait_until(settled, 120, what="the group to settle")
        failed = [t for t in states_meanwhile if t.state == "FAILED"]
        assert not failed, "the zombie made the rightful owner fail"

        for view in views:
            claims = sorted(
                (tmp_path / "checkpoints" / "herd" / f"task-{view.task}").glob(f"{CLAIMS_DIR}/*")
            )
            assert view.worker_id is not None and view.worker_id in claims[-1].read_text()

    for task in (0, 1):
        seqs = committed_column(output / f"task-{task}", "seq")
        assert seqs == list(range(len(seqs))), f"task {task}: gap or duplicate"
