"""A connector re-created under its old name, against a real worker (issue 29, item 2):
its checkpoints are kept by name, as Connect keeps offsets, so the same config continues
where it stopped, another `output.path` is refused with a 400 that says how to proceed,
and a task whose checkpoint does not fit all the same fails once, not in a restart loop.
Before, the re-created generator went FAILED with Spark's BATCH_METADATA_NOT_FOUND at
every automatic restart, forever."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.file_sink import committed_column
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, ready_worker
from tests.support.rest_client import Api
from worker.plugins.checkpoint_fingerprint import FINGERPRINT_FILE

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 120


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("recreate-worker")
    with ready_worker("recreate-worker", broker.bootstrap_servers, root, timeout_s=TIMEOUT_S) as w:
        yield w


def generator(output: Path) -> dict[str, str]:
    """One task, short batches: the file sink compacts its log at batch 9, where a sink
    log begun mid-checkpoint fails."""
    return {
        "connector.class": "generator",
        "tasks.max": "1",
        "rows.per.second": "10",
        "batch.interval.ms": "200",
        "output.path": str(output),
    }


def committed_batches(worker: WorkerProcess, name: str) -> int:
    commits = worker.checkpoint_root / name / "task-0" / "commits"
    return len([entry for entry in commits.iterdir() if entry.name.isdigit()])


def run_until_committed(api: Api, worker: WorkerProcess, name: str, batches: int) -> None:
    api.wait_states(name, "RUNNING", ["RUNNING"])
    wait_until(
        lambda: committed_batches(worker, name),
        TIMEOUT_S,
        what=f"{name}: {batches} batches committed",
        until=lambda count: count >= batches,
    )


def delete(api: Api, name: str) -> None:
    api.call("DELETE", f"/connectors/{name}", 204)
    wait_until(
        lambda: api.call("GET", "/connectors", 200).json(),
        TIMEOUT_S,
        what=f"{name} deleted",
        until=lambda names: name not in names,
    )


def failed_task(api: Api, name: str) -> dict[str, Any]:
    status = wait_until(
        lambda: api.status(name),
        TIMEOUT_S,
        what=f"{name}: task 0 FAILED",
        until=lambda status: [t["state"] for t in status["tasks"]] == ["FAILED"],
    )
    task: dict[str, Any] = status["tasks"][0]
    return task


def test_re_created_with_another_output_path_is_refused_and_with_the_same_continues(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    api, first, other = Api(worker.url), tmp_path / "first", tmp_path / "other"
    api.call("POST", "/connectors", 201, json={"name": "again", "config": generator(first)})
    run_until_committed(api, worker, "again", 2)
    delete(api, "again")
    before = committed_column(first / "task-0", "seq")

    refused = api.call(
        "POST", "/connectors", 400, json={"name": "again", "config": generator(other)}
    )
    message = refused.json()["message"]
    assert "output.path" in message and "checkpoint" in message
    assert "DELETE /connectors/again/offsets" in message and "another name" in message
    api.call("PUT", "/connectors/again/config", 400, json=generator(other))

    api.call("POST", "/connectors", 201, json={"name": "again", "config": generator(first)})
    run_until_committed(api, worker, "again", committed_batches(worker, "again") + 2)
    after = committed_column(first / "task-0", "seq")
    assert after == list(range(len(after))) and len(after) > len(before), "it continued"

    # Connect's way to start over under the same name: stopped, reset, resumed.
    api.call("PUT", "/connectors/again/stop", 204)
    api.wait_states("again", "STOPPED", [])
    api.call("PUT", "/connectors/again/config", 200, json=generator(other))
    api.call("PUT", "/connectors/again/resume", 202)
    task = failed_task(api, "again")
    assert "checkpoint was made for another output.path" in task["trace"]
    assert task["trace"].splitlines()[-1].startswith("Not restarted automatically: ")
    api.call("PUT", "/connectors/again/stop", 204)
    api.wait_states("again", "STOPPED", [])
    api.call("DELETE", "/connectors/again/offsets", 200)
    api.call("PUT", "/connectors/again/resume", 202)
    run_until_committed(api, worker, "again", 2)
    fresh = committed_column(other / "task-0", "seq")
    assert fresh == list(range(len(fresh))) and fresh, "started clean in the new output.path"


def test_a_sink_log_that_lacks_the_checkpoints_batches_fails_once_and_says_what_to_do(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    """A checkpoint from before fingerprints, re-created with another output.path: Spark
    fails at the sink log's first compaction, and that is not restarted."""
    api, first, other = Api(worker.url), tmp_path / "first", tmp_path / "other"
    api.call("POST", "/connectors", 201, json={"name": "legacy", "config": generator(first)})
    run_until_committed(api, worker, "legacy", 2)
    delete(api, "legacy")
    (worker.checkpoint_root / "legacy" / "task-0" / FINGERPRINT_FILE).unlink(missing_ok=True)

    api.call("POST", "/connectors", 201, json={"name": "legacy", "config": generator(other)})
    trace = failed_task(api, "legacy")["trace"]
    assert "BATCH_METADATA_NOT_FOUND" in trace, trace
    last = trace.splitlines()[-1]
    assert last.startswith("Not restarted automatically: "), last
    assert "DELETE /connectors/legacy/offsets" in last
