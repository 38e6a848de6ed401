"""How a worker starts and stops as a process: warm before it joins, signals, and a
Spark log without start-up noise.

Kubernetes sends SIGTERM to the main process; systemd (`KillMode=control-group`), a
`kill -- -PGID` or some supervisors send it to the whole process group, Spark's JVM
included. Either way the worker must stop its tasks itself, in order.
"""

from __future__ import annotations

import json
import signal
from functools import partial
from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.file_sink import committed_column
from tests.support.polling import wait_until
from tests.support.processes import WARM_UP_ON, WorkerProcess, free_port

pytestmark = [pytest.mark.integration, pytest.mark.parallel]
"""It asserts the order of a stop and that it ends within bounds no load approaches (90 s
for a worker alone with two tasks), never how fast."""

STOPPED_CONTEXT = "Cannot call methods on a stopped SparkContext"
SPARK_GONE = "Spark JVM already gone"
SPARK_NOTICES = (
    "FairSchedulableBuilder",
    "spark.sql.adaptive.enabled is not supported in streaming",
    "resolves to a loopback address",
    "NativeCodeLoader",
)
"""What Spark prints by default that means nothing to a sparkherd user."""
JVM_NOTICE = "WARNING: Using incubator modules"


def generator(output: Path) -> dict[str, str]:
    return {
        "connector.class": "generator",
        "tasks.max": "2",
        "rows.per.second": "20",
        "output.path": str(output),
    }


def json_lines(log: str) -> list[dict[str, object]]:
    """Every line of a `log.format=json` worker's log (Spark's JVM included), but the
    one notice the JVM itself prints before any logging starts."""
    return [json.loads(line) for line in log.splitlines() if not line.startswith(JVM_NOTICE)]


def start_running(worker: WorkerProcess, output: Path) -> None:
    """Start `worker`, see it warm up, then give it two generator tasks that commit rows."""
    worker.start()

    def health_and_own_state() -> tuple[dict[str, str], str | None]:
        health = httpx.get(f"{worker.url}/health", timeout=2).json()
        own = httpx.get(f"{worker.url}/workers", timeout=2).json()["workers"]
        return health, own[0]["state"] if own else None

    health, _ = wait_until(
        health_and_own_state,
        120,
        what="/health and /workers to show the worker warming up before it joins",
        until=lambda seen: "warming up" in seen[0]["message"] and seen[1] == "warming",
        interval_s=0.1,
    )
    assert health["status"] == "starting"
    worker.wait_ready(120)
    answer = httpx.post(
        f"{worker.url}/connectors",
        json={"name": "gen", "config": generator(output)},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    for task in (0, 1):
        wait_until(
            partial(committed_column, output / f"task-{task}", "seq"),
            120,
            what=f"task {task} to commit rows",
        )


def test_sigterm_to_the_whole_process_group_stops_the_tasks_in_order(
    broker: EmbeddedBroker, tmp_path: Path, logs_dir: Path
) -> None:
    worker = WorkerProcess(
        "alone",
        broker.bootstrap_servers,
        tmp_path / "ck",
        logs_dir,
        [f"group.id=shutdown-{free_port()}", "log.format=json", WARM_UP_ON],
    )
    try:
        start_running(worker, tmp_path / "out")
        before = len(worker.log_text())
        worker.signal(signal.SIGTERM)
        assert worker.process is not None
        assert worker.process.wait(90) == 0
        log = worker.log_text()[before:]
        assert "stopping: tasks first, then the group, then REST" in log
        assert "alone in the group: nobody to hand 2 tasks to" in log
        assert "handing" not in log, "a worker alone in its group waited for a hand-off round"
        for trouble in (STOPPED_CONTEXT, SPARK_GONE, "Traceback", '"level": "ERROR"'):
            assert trouble not in log, log
        for noise in SPARK_NOTICES:
            assert noise not in worker.log_text()
        lines = json_lines(worker.log_text())
        assert {"connector": "gen", "task": 0}.items() <= next(
            line for line in lines if "gen-0" in str(line.get("message"))
        ).items()
        for task in (0, 1):
            seqs = committed_column(tmp_path / "out" / f"task-{task}", "seq")
            assert seqs == list(range(len(seqs)))
    finally:
        worker.kill()
