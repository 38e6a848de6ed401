"""`/metrics`: Strimzi's Kafka Connect series names, labels and values from the herder."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from herder.stores.config_records import TargetState
from protocol.messages import Allocation, ConnectorTaskId
from tests.unit.rest.conftest import FakeRuntime
from tests.unit.rest.fake_herder import FakeHerder
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.task_state import TaskState
from worker.records.errors.task_errors import BatchErrors, write_batch_errors
from worker.runtime.checkpoint_offsets import newest_committed_batch
from worker.runtime.task_error_totals import TaskErrorTotals, read_error_totals
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import TriggerLag


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
    assert seen[("sparkherd_config_records_refused_total", ())] == 2


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


TASK_ERROR_SERIES = {
    "kafka_connect_task_error_total_record_errors": 12,
    "kafka_connect_task_error_total_record_failures": 14,
    "kafka_connect_task_error_total_records_skipped": 12,
    "kafka_connect_task_error_total_errors_logged": 2,
    "kafka_connect_task_error_deadletterqueue_produce_requests": 12,
    "kafka_connect_task_error_deadletterqueue_produce_failures": 1,
    "kafka_connect_task_error_last_error_timestamp": 1_764_000_000_500,
}
"""Strimzi's names of Connect's `task-error-metrics`, with what batches 1 and 2 below
add up to."""


def test_each_task_reports_its_error_totals_from_its_checkpoint(
    client: TestClient, runtime: FakeRuntime, tmp_path: Path
) -> None:
    """Gauges, as Strimzi's exporter types them, labelled like the task's other series,
    summing the committed batches' files: batch 3 has written its file but not committed."""
    task, quiet = ConnectorTaskId("k2f", 0), ConnectorTaskId("k2f", 1)
    checkpoint = checkpoint_dir_for(tmp_path, task.connector, task.task)
    (checkpoint / "commits").mkdir(parents=True)
    for batch in range(3):
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    common = {"record_errors": 6, "records_skipped": 6, "deadletterqueue_produce_requests": 6}
    write_batch_errors(
        checkpoint, 1, BatchErrors(**common, record_failures=6, last_error_timestamp_ms=10)
    )
    write_batch_errors(
        checkpoint,
        2,
        BatchErrors(
            **common,
            record_failures=8,
            errors_logged=2,
            deadletterqueue_produce_failures=1,
            last_error_timestamp_ms=1_764_000_000_500,
        ),
    )
    write_batch_errors(checkpoint, 3, BatchErrors(record_errors=100))
    totals = read_error_totals(checkpoint, TaskErrorTotals(), newest_committed_batch(checkpoint))
    runtime.counted = {task: totals.totals, quiet: BatchErrors()}

    answer = client.get("/metrics")
    families = {family.name: family for family in text_string_to_metric_families(answer.text)}
    for name, value in TASK_ERROR_SERIES.items():
        family = families[name]
        assert family.type == "gauge", name
        samples = {tuple(sorted(s.labels.items())): s for s in family.samples}
        assert set(samples) == {
            (("connector", "k2f"), ("task", "0")),
            (("connector", "k2f"), ("task", "1")),
        }
        assert all(sample.name == name for sample in samples.values())
        assert samples[(("connector", "k2f"), ("task", "0"))].value == value, name
        assert samples[(("connector", "k2f"), ("task", "1"))].value == 0, name


def test_a_task_behind_its_trigger_shows_in_its_lag_and_the_overload_gauge(
    client: TestClient, runtime: FakeRuntime
) -> None:
    on_cadence, starved = ConnectorTaskId("gen", 0), ConnectorTaskId("gen", 1)
    runtime.lags = {on_cadence: TriggerLag(0.0, 2.0)}
    seen = scrape(client)
    assert seen[("sparkherd_task_trigger_lag_seconds", (("connector", "gen"), ("task", "0")))] == 0
    assert seen[("sparkherd_worker_overloaded", ())] == 0
    assert seen[("sparkherd_worker_tasks_behind", ())] == 0
    runtime.lags[starved] = TriggerLag(9.5, 2.0)
    seen = scrape(client)
    assert (
        seen[("sparkherd_task_trigger_lag_seconds", (("connector", "gen"), ("task", "1")))] == 9.5
    )
    assert seen[("sparkherd_worker_overloaded", ())] == 1
    assert seen[("sparkherd_worker_tasks_behind", ())] == 1


def test_the_load_the_leader_places_by_is_a_gauge(client: TestClient, runtime: FakeRuntime) -> None:
    """The figure a member sends in its JoinGroup (`worker.driver_load`), so an operator
    sees why the leader gave a worker no new task."""
    light, heavy = ConnectorTaskId("gen", 0), ConnectorTaskId("gen", 1)
    runtime.lags = {light: TriggerLag(0.0, 2.0), heavy: TriggerLag(0.0, 2.0)}
    runtime.seen = {
        light: TaskProgress(4, 20, 5.0, 5.0, 200, None, committed_at=1.0),
        heavy: TaskProgress(4, 20, 5.0, 5.0, 1_000, None, committed_at=1.0),
    }
    assert scrape(client)[("sparkherd_worker_load_permille", ())] == 100 + 500
    runtime.lags[heavy] = TriggerLag(9.5, 2.0)
    assert scrape(client)[("sparkherd_worker_load_permille", ())] >= 1_000
