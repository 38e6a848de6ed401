"""`/metrics`: Strimzi's Kafka Connect series names, labels and values from the herder."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from herder.config_store import TargetState
from protocol.messages import Allocation, ConnectorTaskId
from tests.unit.rest.conftest import FakeRuntime
from tests.unit.rest.fake_herder import FakeHerder
from worker.task_progress import TaskProgress
from worker.task_state import TaskState


def scrape(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def test_counts_and_statuses_follow_the_work_on_this_worker(
    client: TestClient, herder: FakeHerder, runtime: FakeRuntime
) -> None:
    herder.add("gen", tasks=3)
    herder.add("idle", tasks=1, target=TargetState.PAUSED)
    tasks = [ConnectorTaskId("gen", i) for i in range(3)]
    herder.owned = Allocation.of(["gen"], [*tasks, ConnectorTaskId("idle", 0)])
    herder.report("gen", TaskState.RUNNING)
    herder.report(tasks[0], TaskState.RUNNING)
    herder.report(tasks[1], TaskState.RUNNING)
    herder.report(tasks[2], TaskState.FAILED, "boom")
    herder.report(ConnectorTaskId("idle", 0), TaskState.PAUSED)
    runtime.startups.attempts, runtime.startups.successes, runtime.startups.failures = 4, 3, 1
    seen = scrape(client)

    assert seen[("kafka_connect_worker_connector_count", ())] == 1
    assert seen[("kafka_connect_worker_task_count", ())] == 4
    gen = (("connector", "gen"),)
    assert seen[("kafka_connect_worker_connector_running_task_count", gen)] == 2
    assert seen[("kafka_connect_worker_connector_failed_task_count", gen)] == 1
    assert seen[("kafka_connect_worker_connector_paused_task_count", gen)] == 0
    idle = (("connector", "idle"),)
    assert seen[("kafka_connect_worker_connector_paused_task_count", idle)] == 1
    assert seen[("kafka_connect_worker_connector_destroyed_task_count", idle)] == 0
    assert seen[("kafka_connect_worker_task_startup_attempts_total", ())] == 4
    assert seen[("kafka_connect_worker_task_startup_failure_total", ())] == 1
    assert seen[("kafka_connect_worker_connector_startup_success_total", ())] == 1
    assert seen[("kafka_connect_connector_status", (("connector", "gen"), ("status", "running")))]
    failed = (("connector", "gen"), ("status", "failed"), ("task", "2"))
    assert seen[("kafka_connect_connector_task_status", failed)] == 1
    assert seen[("kafka_connect_coordinator_assigned_tasks", ())] == 4
    assert seen[("kafka_connect_worker_rebalance_completed_rebalances_total", ())] == 2
    assert seen[("kafka_connect_worker_rebalance_rebalance_max_time_ms", ())] == 200
    assert seen[("kafka_connect_worker_rebalance_epoch", ())] == 3
    assert seen[("sparkherd_worker_state", (("state", "running"),))] == 1
    assert seen[("sparkherd_auto_restarts_total", ())] == 3


def test_each_task_reports_its_spark_progress(
    client: TestClient, herder: FakeHerder, runtime: FakeRuntime
) -> None:
    task = ConnectorTaskId("k2f", 1)
    runtime.seen[task] = TaskProgress(
        batch_id=7,
        input_rows_total=1_500,
        input_rows_per_second=210.0,
        processed_rows_per_second=400.0,
        batch_duration_ms=950,
        source_lag=42,
    )
    seen = scrape(client)
    key = (("connector", "k2f"), ("task", "1"))
    assert seen[("sparkherd_task_input_rows_total", key)] == 1_500
    assert seen[("sparkherd_task_input_rows_per_second", key)] == 210
    assert seen[("sparkherd_task_processed_rows_per_second", key)] == 400
    assert seen[("sparkherd_task_batch_duration_ms", key)] == 950
    assert seen[("sparkherd_task_last_committed_batch_id", key)] == 7
    assert seen[("sparkherd_task_source_lag", key)] == 42
