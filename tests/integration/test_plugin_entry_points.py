"""A connector plugin installed only as an entry point (`sparkherd.connectors`) is
listed, validated, run and stopped by a real worker, like a third-party package would be."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.file_sink import committed_files
from tests.support.processes import WorkerProcess, free_port, wait_until
from worker.embedded_broker import EmbeddedBroker

pytestmark = pytest.mark.integration

PLUGIN_PATH = Path(__file__).parents[1] / "data" / "plugin_path"
ALIAS = "test-echo"
TIMEOUT_S = 120


def call(worker: WorkerProcess, method: str, path: str, expect: int, **kwargs: Any) -> Any:
    answer = httpx.request(method, f"{worker.url}{path}", timeout=60, **kwargs)
    assert answer.status_code == expect, f"{method} {path}: {answer.status_code} {answer.text}"
    return answer.json() if answer.content else None


def states(worker: WorkerProcess, name: str) -> tuple[str, list[str]]:
    status = httpx.get(f"{worker.url}/connectors/{name}/status", timeout=10).json()
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


@pytest.fixture(scope="module")
def plugin_host(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("plugin-host")
    worker = WorkerProcess(
        "plugin-host",
        broker.bootstrap_servers,
        root / "checkpoints",
        root,
        [f"group.id=plugins-{free_port()}"],
        python_path=[PLUGIN_PATH],
    ).start()
    try:
        worker.wait_ready(TIMEOUT_S)
        yield worker
    finally:
        worker.kill()


def echoed(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in committed_files(directory)
        for line in path.read_text().splitlines()
    ]


def test_an_entry_point_plugin_is_listed_validated_run_and_stopped(
    plugin_host: WorkerProcess, tmp_path: Path
) -> None:
    worker = plugin_host
    listed = call(worker, "GET", "/connector-plugins", 200)
    assert {"class": "tests.support.echo_plugin.EchoConnector", "type": "source"} in listed

    keys = call(worker, "GET", f"/connector-plugins/{ALIAS}/config", 200)
    assert {"message", "output.path"} <= {k["name"] for k in keys}
    output = tmp_path / "out"
    checked = call(
        worker,
        "PUT",
        f"/connector-plugins/{ALIAS}/config/validate",
        200,
        json={"connector.class": ALIAS, "output.path": str(output), "message": ""},
    )
    assert checked["error_count"] == 1
    [message] = [c for c in checked["configs"] if c["value"]["name"] == "message"]
    assert message["value"]["errors"]

    config = {
        "connector.class": ALIAS,
        "tasks.max": "2",
        "message": "hello",
        "output.path": str(output),
    }
    call(worker, "POST", "/connectors", 201, json={"name": "echo", "config": config})
    wait_until(
        lambda: states(worker, "echo") == ("RUNNING", ["RUNNING", "RUNNING"]),
        TIMEOUT_S,
        what="echo running",
    )
    wait_until(
        lambda: all(committed_files(output / f"task-{t}") for t in (0, 1)),
        TIMEOUT_S,
        what="rows from both tasks",
    )
    rows = echoed(output / "task-1")
    assert rows and all(row["message"] == "hello" and row["task"] == 1 for row in rows)

    call(worker, "PUT", "/connectors/echo/stop", 204)
    wait_until(lambda: states(worker, "echo") == ("STOPPED", []), TIMEOUT_S, what="echo stopped")
    settled = len(committed_files(output / "task-0"))
    time.sleep(3)
    assert len(committed_files(output / "task-0")) == settled, "a stopped task still writes"
    call(worker, "DELETE", "/connectors/echo", 204)


def test_a_connector_whose_split_follows_the_outside_world_is_reconfigured(
    plugin_host: WorkerProcess, tmp_path: Path
) -> None:
    worker, shards, output = plugin_host, tmp_path / "shards", tmp_path / "out"
    (shards / "alpha").mkdir(parents=True)
    config = {
        "connector.class": "test-sharded-echo",
        "tasks.max": "3",
        "shards.dir": str(shards),
        "output.path": str(output),
    }
    call(worker, "POST", "/connectors", 201, json={"name": "sharded", "config": config})
    wait_until(
        lambda: states(worker, "sharded") == ("RUNNING", ["RUNNING"]), TIMEOUT_S, what="one shard"
    )

    (shards / "beta").mkdir()
    wait_until(
        lambda: states(worker, "sharded") == ("RUNNING", ["RUNNING", "RUNNING"]),
        TIMEOUT_S,
        what="a task for the new shard",
    )
    rows = wait_until(lambda: echoed(output / "task-1"), TIMEOUT_S, what="rows of the new task")
    assert {row["message"] for row in rows} == {"beta"}

    (shards / "beta").rmdir()
    wait_until(
        lambda: states(worker, "sharded") == ("RUNNING", ["RUNNING"]), TIMEOUT_S, what="back to one"
    )
    call(worker, "DELETE", "/connectors/sharded", 204)
