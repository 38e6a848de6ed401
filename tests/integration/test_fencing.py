"""Self-fencing (Kafka's KAFKA-9184): a worker cut off from the coordinator stops its
tasks on its own, before the group could have handed them to someone else."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.support.file_sink import committed_files
from tests.support.processes import WorkerProcess, running_broker, wait_until

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

            settled = len(committed_files(output / "task-0"))
            time.sleep(3)
            assert len(committed_files(output / "task-0")) == settled, "still writing"
            assert worker.process is not None and worker.process.poll() is None
        finally:
            worker.signal(signal.SIGKILL)
            worker.kill()
