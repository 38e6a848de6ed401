"""Connector plugins installed only as entry points (`sparkherd.connectors`) are listed,
validated, run, reconfigured and stopped by a real worker, as a third-party package's
would be."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.file_sink import committed_files
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, ready_worker
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

PLUGIN_PATH = Path(__file__).parents[1] / "data" / "plugin_path"
ALIAS = "test-echo"
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def plugin_worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("plugin-host")
    with ready_worker(
        "plugin-host", broker.bootstrap_servers, root, python_path=[PLUGIN_PATH]
    ) as worker:
        yield worker


@pytest.fixture
def plugin_host(plugin_worker: WorkerProcess) -> Api:
    return Api(plugin_worker.url)


def echoed(directory: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in committed_files(directory)
        for line in path.read_text().splitlines()
    ]


def test_an_entry_point_plugin_is_listed_validated_run_and_stopped(
    plugin_host: Api, plugin_worker: WorkerProcess, tmp_path: Path
) -> None:
    api = plugin_host
    listed = api.call("GET", "/connector-plugins", 200).json()
    echo = {"class": "tests.support.echo_plugin.EchoConnector", "type": "source", "alias": ALIAS}
    assert echo in listed

    keys = api.call("GET", f"/connector-plugins/{ALIAS}/config", 200).json()
    assert {"message", "output.path"} <= {k["name"] for k in keys}
    output = tmp_path / "out"
    checked = api.call(
        "PUT",
        f"/connector-plugins/{ALIAS}/config/validate",
        200,
        json={"connector.class": ALIAS, "output.path": str(output), "message": ""},
    ).json()
    assert checked["error_count"] == 1
    [message] = [c for c in checked["configs"] if c["value"]["name"] == "message"]
    assert message["value"]["errors"]

    config = {
        "connector.class": ALIAS,
        "tasks.max": "2",
        "message": "hello",
        "output.path": str(output),
    }
    api.call("POST", "/connectors", 201, json={"name": "echo", "config": config})
    api.wait_states("echo", "RUNNING", ["RUNNING", "RUNNING"])
    wait_until(
        lambda: all(committed_files(output / f"task-{t}") for t in (0, 1)),
        TIMEOUT_S,
        what="rows from both tasks",
    )
    rows = echoed(output / "task-1")
    assert rows and all(row["message"] == "hello" and row["task"] == 1 for row in rows)

    log_before = len(plugin_worker.log_text())
    api.call("PUT", "/connectors/echo/stop", 204)
    api.wait_states("echo", "STOPPED", [])
    # STOPPED shows at once, as in Connect; the tasks stop in the rebalance that follows.
    api.once_tasks_stopped("DELETE", "/connectors/echo/offsets")
    plugin_worker.wait_tasks_stopped(["echo-0", "echo-1"], log_before, TIMEOUT_S)
    settled = len(committed_files(output / "task-0"))
    assert len(committed_files(output / "task-0")) == settled, "a stopped task still writes"
    api.call("DELETE", "/connectors/echo", 204)


def test_a_connector_whose_split_follows_the_outside_world_is_reconfigured(
    plugin_host: Api, tmp_path: Path
) -> None:
    api, shards, output = plugin_host, tmp_path / "shards", tmp_path / "out"
    (shards / "alpha").mkdir(parents=True)
    config = {
        "connector.class": "test-sharded-echo",
        "tasks.max": "3",
        "shards.dir": str(shards),
        "output.path": str(output),
    }
    api.call("POST", "/connectors", 201, json={"name": "sharded", "config": config})
    api.wait_states("sharded", "RUNNING", ["RUNNING"])

    (shards / "beta").mkdir()
    api.wait_states("sharded", "RUNNING", ["RUNNING", "RUNNING"])
    rows = wait_until(lambda: echoed(output / "task-1"), TIMEOUT_S, what="rows of the new task")
    assert {row["message"] for row in rows} == {"beta"}

    (shards / "beta").rmdir()
    api.wait_states("sharded", "RUNNING", ["RUNNING"])
    api.call("DELETE", "/connectors/sharded", 204)
