"""What an operator watches, on a live two-worker cluster: `/metrics` agrees with what
`/connectors/{c}/status` says, worker by worker, and the log says when a worker is ready
without Spark's routine warnings around it."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from protocol.versions import CURRENT_VERSION
from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config, worker_pair
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 120
READY_LINE = "ready: /health answers 200"
ROUTINE_WARNINGS = ("Current batch is falling behind", "Failed to cancel job group")
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def pair(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WorkerProcess, WorkerProcess]]:
    root = tmp_path_factory.mktemp("observed")
    with worker_pair(broker, root, [f"group.id=observed-{free_port()}"]) as (first, second, *_):
        api = Api(first.url)
        api.call(
            "POST",
            "/connectors",
            201,
            json={"name": "gen", "config": generator_config(root / "out", tasks=4)},
        )
        api.wait_states("gen", "RUNNING", ["RUNNING"] * 4)
        yield first, second


def scrape(worker: WorkerProcess) -> Samples:
    answer = httpx.get(f"{worker.url}/metrics", timeout=10)
    answer.raise_for_status()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def has_read_rows(samples: Samples, key: tuple[tuple[str, str], ...]) -> bool:
    return samples.get(("sparkherd_task_input_rows_total", key), 0) > 0


def worker_id(worker: WorkerProcess) -> str:
    return worker.url.removeprefix("http://")


def test_metrics_agree_with_the_status_api(pair: tuple[WorkerProcess, WorkerProcess]) -> None:
    status = Api(pair[0].url).status("gen")
    placed = {
        w: [t["id"] for t in status["tasks"] if t["worker_id"] == w] for w in map(worker_id, pair)
    }
    assert sum(map(len, placed.values())) == 4
    for worker in pair:
        seen = scrape(worker)
        mine = placed[worker_id(worker)]
        assert seen[("kafka_connect_worker_task_count", ())] == len(mine)
        assert seen[("kafka_connect_coordinator_assigned_tasks", ())] == len(mine)
        running = seen.get(
            ("kafka_connect_worker_connector_running_task_count", (("connector", "gen"),)), 0
        )
        assert running == len(mine)
        for task in mine:
            labels = (("connector", "gen"), ("status", "running"), ("task", str(task)))
            assert seen[("kafka_connect_connector_task_status", labels)] == 1
        runs_connector = status["connector"]["worker_id"] == worker_id(worker)
        connector_labels = (("connector", "gen"), ("status", "running"))
        assert seen.get(("kafka_connect_connector_status", connector_labels), 0) == runs_connector
        assert seen[("kafka_connect_worker_rebalance_completed_rebalances_total", ())] >= 1
        assert seen[("kafka_connect_worker_rebalance_epoch", ())] >= 1
        assert seen[("sparkherd_worker_state", (("state", "running"),))] == 1
        assert seen[("sparkherd_protocol_version", ())] == CURRENT_VERSION


def test_each_task_reports_spark_progress_where_it_runs(
    pair: tuple[WorkerProcess, WorkerProcess],
) -> None:
    for worker in pair:
        mine = [
            t["id"]
            for t in Api(worker.url).status("gen")["tasks"]
            if t["worker_id"] == worker_id(worker)
        ]
        for task in mine:
            key = (("connector", "gen"), ("task", str(task)))
            seen = wait_until(
                partial(scrape, worker),
                TIMEOUT_S,
                what=f"task {task} on {worker.name} to report rows read",
                until=partial(has_read_rows, key=key),
            )
            assert seen[("sparkherd_task_last_committed_batch_id", key)] >= 0
            assert seen[("sparkherd_task_batch_duration_ms", key)] > 0


def committed_batch(worker: WorkerProcess, connector: str, task: int) -> float:
    key = (("connector", connector), ("task", str(task)))
    return scrape(worker).get(("sparkherd_task_last_committed_batch_id", key), -1)


def wait_for_a_later_job(worker: WorkerProcess) -> None:
    """Wait until Spark's scheduler on `worker` has run a job submitted after now: its
    event loop handles events in order, so it has then also logged whatever the stops
    before now made it log (the cancelled job group, after the query's stop returned).
    The job is a batch of the fixture's `gen` task on that worker; two batches, since the
    next one may have been submitted already."""
    mine = [
        t["id"]
        for t in Api(worker.url).status("gen")["tasks"]
        if t["worker_id"] == worker_id(worker)
    ]
    assert mine, f"{worker.name} runs no task of gen to order its scheduler's events by"
    now = committed_batch(worker, "gen", mine[0])
    wait_until(
        partial(committed_batch, worker, "gen", mine[0]),
        TIMEOUT_S,
        what=f"gen's task {mine[0]} on {worker.name} to commit two more batches after {now:g}",
        until=lambda batch: batch >= now + 2,
    )


def logged(worker: WorkerProcess, line: str) -> bool:
    return line in worker.log_text()


def test_the_log_says_when_ready_and_leaves_spark_routine_warnings_out(
    pair: tuple[WorkerProcess, WorkerProcess], tmp_path: Path
) -> None:
    """One line when `/health` turned 200. Then a connector whose 100 ms triggers no
    batch keeps up with, stopped between batches: Spark warned of every late batch and
    of every stop (a job group cancelled with no job running)."""
    for worker in pair:
        assert worker.log_text().count(READY_LINE) == 1
        assert httpx.get(f"{worker.url}/health", timeout=10).status_code == 200
    api = Api(pair[0].url)
    config = {**generator_config(tmp_path / "out", tasks=2), "batch.interval.ms": "100"}
    api.call("POST", "/connectors", 201, json={"name": "quick", "config": config})
    status = api.wait_states("quick", "RUNNING", ["RUNNING"] * 2)
    owners = {w.url.removeprefix("http://"): w for w in pair}
    for task in status["tasks"]:
        owner = owners[task["worker_id"]]
        wait_until(
            partial(committed_batch, owner, "quick", task["id"]),
            TIMEOUT_S,
            what=f"task {task['id']} to commit batches on {owner.name}",
            until=lambda batch: batch >= 5,
        )
    api.call("DELETE", "/connectors/quick", 204)
    for task in status["tasks"]:
        owner = owners[task["worker_id"]]
        wait_until(
            partial(logged, owner, f"Task quick-{task['id']} stopped"),
            TIMEOUT_S,
            what=f"task {task['id']} to stop on {owner.name}",
        )
    for worker in pair:
        wait_for_a_later_job(worker)
        log = worker.log_text()
        assert [w for w in ROUTINE_WARNINGS if w in log] == [], worker.name
