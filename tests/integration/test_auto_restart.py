"""A failed task restarts by itself once its cause is gone (issue 19): a real worker, a
real broker and real Spark, and no REST call but reads once the connector exists."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config
from tests.support.file_sink import committed_column
from tests.support.polling import wait_until
from tests.support.processes import ready_worker
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]
"""The back-offs it sets are lower bounds of when a restart comes; it asserts the traces
and that the task runs again, never how soon."""

TIMEOUT_S = 120
BACK_OFF = {
    "auto.restart.initial.backoff.ms": "500",
    "auto.restart.max.backoff.ms": "30000",
    "auto.restart.max.attempts": "10",
}
"""Restarts after 0.5, 1, 2, 4, ... s; a run shorter than 30 s counts as a failed one."""


def task_trace(status: dict[str, Any]) -> str:
    task = status["tasks"][0] if status["tasks"] else {}
    return str(task.get("trace") or "") if task.get("state") == "FAILED" else ""


def test_a_failed_task_runs_again_once_its_cause_is_gone_with_no_rest_call(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    blocked = tmp_path / "out"
    blocked.write_text("a file where the task's output directory should be")
    root = tmp_path / "worker"
    root.mkdir()
    with ready_worker(
        "auto-restart", broker.bootstrap_servers, root, timeout_s=TIMEOUT_S
    ) as worker:
        api = Api(worker.url)
        config = {**generator_config(blocked, 1), **BACK_OFF}
        refused = httpx.post(
            f"{worker.url}/connectors",
            json={"name": "phoenix", "config": {**config, "auto.restart.max.attempts": "0"}},
            timeout=60,
        )
        assert refused.status_code == 400, refused.text
        assert "auto.restart.max.attempts: invalid value '0'" in refused.json()["message"]

        api.call("POST", "/connectors", 201, json={"name": "phoenix", "config": config})
        retried = wait_until(
            partial(api.status, "phoenix"),
            TIMEOUT_S,
            what="an automatic restart that failed as well",
            until=lambda status: (
                "Automatic restart 1 of 10 failed; automatic restart 2 of 10" in task_trace(status)
            ),
        )
        assert "ParentNotDirectoryException" in task_trace(retried)

        blocked.unlink()
        api.wait_states("phoenix", "RUNNING", ["RUNNING"])
        wait_until(
            partial(committed_column, blocked / "task-0", "seq"), TIMEOUT_S, what="a first batch"
        )
