"""A worker frozen until its tasks have moved, then thawed: every task runs again at once.

SIGSTOP freezes a worker as a long GC pause, a stalled VM or a suspended node would;
the group hands its tasks to the live worker, whose claims fence the frozen worker's
queries. After SIGCONT the thawed worker must give up what it lost instead of reporting
it as its own: once it did not, and the leader stopped the live copies to hand the tasks
"back" to a worker whose queries had already been fenced, leaving them down for good;
on Tansu it still did so from a join it had begun before the freeze and retried after
the thaw with its old subscription. Frozen whole, or Python alone while its Spark JVM (a
session of its own) runs on. The live worker takes the tasks over without a failed start:
the frozen worker's claims are simply overtaken (once, its starts failed on the frozen
JVM's queries until auto-restart gave up a round). The thaw comes once the live worker
has committed two batches of each task: counting the zombie's own earlier batches, it
came as the live worker started, and the zombie, frozen after its claim check, committed
its batch in flight at the same moment as the live worker's first one, which failed on
`CONCURRENT_STREAM_LOG_UPDATE` and ran again after the auto-restart's 5 s.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster, generator_config
from tests.support.file_sink import committed_column, committed_files
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.long]

TASKS = 4
SESSION_TIMEOUT_MS = 6000
DELAY_MS = 10_000


def freeze_whole(worker: WorkerProcess, sig: signal.Signals) -> None:
    worker.signal_every_process(sig)


def freeze_python_alone(worker: WorkerProcess, sig: signal.Signals) -> None:
    assert worker.process is not None
    os.kill(worker.process.pid, sig)


@pytest.mark.parametrize(
    ("freeze", "frozen", "broker_fixture"),
    [
        (freeze_whole, "leader", "kafka_broker"),
        (freeze_python_alone, "follower", "kafka_broker"),
        (freeze_whole, "leader", "tansu_broker"),
    ],
    ids=["whole-leader-kafka", "python-follower-kafka", "whole-leader-tansu"],
)
def test_every_task_runs_again_soon_after_a_frozen_worker_thaws(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    freeze: Callable[[WorkerProcess, signal.Signals], None],
    frozen: str,
    broker_fixture: str,
) -> None:
    broker: EmbeddedBroker = request.getfixturevalue(broker_fixture)
    output = tmp_path / "out"
    cluster = Cluster(
        broker.bootstrap_servers,
        tmp_path,
        size=2,
        settings=[
            f"scheduled.rebalance.max.delay.ms={DELAY_MS}",
            f"session.timeout.ms={SESSION_TIMEOUT_MS}",
            "heartbeat.interval.ms=1000",
        ],
    )
    with cluster.running():
        config = {**generator_config(output, tasks=TASKS), "batch.interval.ms": "1000"}
        cluster.create("herd", config)
        cluster.wait_at_rest(TASKS)
        leader = cluster.workers_view()["leader"]
        [zombie] = [w for w in cluster.workers if (w.url == leader) == (frozen == "leader")]
        [live] = [w for w in cluster.workers if w is not zombie]
        live_id = live.url.removeprefix("http://")

        freeze(zombie, signal.SIGSTOP)
        try:
            wait_until(
                lambda: (
                    (views := cluster.converged(TASKS)) is not None
                    and all(v.worker_id == live_id for v in views)
                ),
                120,
                what="the live worker to run every task",
            )
            taken_over = [len(committed_files(output / f"task-{t}")) for t in range(TASKS)]
            wait_until(
                lambda: all(
                    len(committed_files(output / f"task-{t}")) >= taken_over[t] + 2
                    for t in range(TASKS)
                ),
                60,
                what="two batches of each task committed on the live worker",
            )
        finally:
            freeze(zombie, signal.SIGCONT)
        thawed_at = time.monotonic()
        views = cluster.wait_at_rest(TASKS, timeout_s=90)
        print(f"at rest {time.monotonic() - thawed_at:.1f} s after the thaw: {views}")
        assert {v.state for v in views} == {"RUNNING"}

        written = {t: len(committed_files(output / f"task-{t}")) for t in range(TASKS)}
        wait_until(
            partial(
                lambda seen: all(
                    len(committed_files(output / f"task-{t}")) > seen[t] for t in range(TASKS)
                ),
                written,
            ),
            60,
            what="every task to commit again",
        )

    failed_starts = [
        line
        for line in live.log_text().splitlines()
        if "spark_task_runtime: Task " in line and line.endswith(" failed:")
    ]
    assert not failed_starts, f"the live worker's takeover failed first: {failed_starts}"
    for task in range(TASKS):
        seqs = committed_column(output / f"task-{task}", "seq")
        assert seqs == list(range(len(seqs))), f"task {task}: gap or duplicate"
