"""`GET /metrics`: Prometheus text, under the names Strimzi's Kafka Connect exporter gives
Connect's JMX metrics, so its dashboard and alert rules read sparkherd unchanged.

Connect's per-worker metrics describe the work on that worker, so each worker reports
its own connectors and tasks and Prometheus sums over workers. What only sparkherd has
is prefixed `sparkherd_`: Spark's per-task progress, the scheduled-rebalance delay, the
protocol version, fencing and hand-offs. Everything is read at scrape time from the
herder's and the runtime's own state; nothing is kept here.

A task's error totals (Connect's `task-error-metrics`) are gauges, as Strimzi's exporter
types them: they count every batch the task's checkpoint committed, on whichever worker,
so they carry on where the task's previous worker left them rather than restart at 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final, Protocol

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from herder.metrics import WorkerMetrics
from protocol.messages import ConnectorTaskId
from rest.herder_api import HerderDep
from rest.worker_seam import (
    BatchErrors,
    StartupCounts,
    TaskProgress,
    TriggerLag,
    driver_load,
    tasks_behind,
)

TASK_STATES = ("running", "paused", "failed", "unassigned", "destroyed")
"""The states Connect counts per connector (`connector-<state>-task-count`)."""


class RuntimeMetrics(Protocol):
    """What the task runtime reports (`worker.runtime.spark_task_runtime.SparkTaskRuntime`)."""

    @property
    def startups(self) -> StartupCounts: ...

    @property
    def fenced(self) -> int: ...

    def progress(self) -> dict[ConnectorTaskId, TaskProgress]: ...

    def errors(self) -> dict[ConnectorTaskId, BatchErrors]: ...

    def trigger_lags(self) -> dict[ConnectorTaskId, TriggerLag]: ...


class WorkerCollector(Collector):
    def __init__(self, worker: WorkerMetrics, runtime: RuntimeMetrics) -> None:
        self._worker = worker
        self._runtime = runtime

    def collect(self) -> Iterator[Metric]:
        metrics = self._worker
        yield from _worker_metrics(metrics, self._runtime.startups)
        yield from _rebalance_metrics(metrics)
        yield from _status_metrics(metrics)
        yield from _sparkherd_metrics(metrics, self._runtime)
        yield from _progress_metrics(self._runtime.progress())
        yield from _error_metrics(self._runtime.errors())
        lags = self._runtime.trigger_lags()
        yield from _lag_metrics(lags)
        yield _gauge(
            "sparkherd_worker_load_permille",
            "the load this worker reports to the group's leader when it joins, in per mille "
            "of its driver (1000 and up: overloaded, given no new task while another worker "
            "has room)",
            driver_load(lags, self._runtime.progress()),
        )


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


def _startups(kind: str, counts: StartupCounts) -> Iterator[Metric]:
    prefix = f"kafka_connect_worker_{kind}_startup"
    yield _counter(f"{prefix}_attempts", f"{kind} starts attempted", counts.attempts)
    yield _counter(f"{prefix}_success", f"{kind} starts that succeeded", counts.successes)
    yield _counter(f"{prefix}_failure", f"{kind} starts that failed", counts.failures)


def _worker_metrics(metrics: WorkerMetrics, task_startups: StartupCounts) -> Iterator[Metric]:
    yield _gauge(
        "kafka_connect_worker_connector_count",
        "connectors this worker runs",
        len(metrics.connectors),
    )
    yield _gauge("kafka_connect_worker_task_count", "tasks this worker runs", len(metrics.tasks))
    per_connector = {
        state: GaugeMetricFamily(
            f"kafka_connect_worker_connector_{state}_task_count",
            f"tasks of the connector on this worker that are {state}",
            labels=["connector"],
        )
        for state in TASK_STATES
    }
    counts: dict[str, dict[str, int]] = {}
    for task, state in metrics.tasks.items():
        by_state = counts.setdefault(task.connector, dict.fromkeys(TASK_STATES, 0))
        if state in by_state:
            by_state[state] += 1
    for connector, by_state in sorted(counts.items()):
        for state, family in per_connector.items():
            family.add_metric([connector], by_state[state])
    yield from per_connector.values()
    yield from _startups("connector", metrics.connector_startups)
    yield from _startups("task", task_startups)
    yield _gauge(
        "kafka_connect_coordinator_assigned_connectors",
        "connectors assigned to this worker",
        len(metrics.connectors),
    )
    yield _gauge(
        "kafka_connect_coordinator_assigned_tasks",
        "tasks assigned to this worker",
        len(metrics.tasks),
    )


def _rebalance_metrics(metrics: WorkerMetrics) -> Iterator[Metric]:
    rebalance = metrics.rebalance
    prefix = "kafka_connect_worker_rebalance"
    yield _counter(
        f"{prefix}_completed_rebalances", "rebalances this worker completed", rebalance.completed
    )
    yield _gauge(
        f"{prefix}_rebalancing", "1 while a rebalance is in progress", rebalance.rebalancing
    )
    yield _gauge(f"{prefix}_rebalance_avg_time_ms", "average rebalance time", rebalance.avg_time_ms)
    yield _gauge(f"{prefix}_rebalance_max_time_ms", "longest rebalance time", rebalance.max_time_ms)
    yield _gauge(
        f"{prefix}_time_since_last_rebalance_ms",
        "time since the last completed rebalance (-1: none yet)",
        rebalance.time_since_last_ms,
    )
    yield _gauge(f"{prefix}_epoch", "the group generation", metrics.generation)


def _status_metrics(metrics: WorkerMetrics) -> Iterator[Metric]:
    connectors = GaugeMetricFamily(
        "kafka_connect_connector_status",
        "1 for the connector's current state",
        labels=["connector", "status"],
    )
    for connector, state in sorted(metrics.connectors.items()):
        connectors.add_metric([connector, state], 1)
    yield connectors
    tasks = GaugeMetricFamily(
        "kafka_connect_connector_task_status",
        "1 for the task's current state",
        labels=["connector", "task", "status"],
    )
    for task, state in sorted(metrics.tasks.items()):
        tasks.add_metric([task.connector, str(task.task), state], 1)
    yield tasks


def _sparkherd_metrics(metrics: WorkerMetrics, runtime: RuntimeMetrics) -> Iterator[Metric]:
    yield _gauge(
        "sparkherd_scheduled_rebalance_remaining_ms",
        "time left of the scheduled-rebalance delay (0: none)",
        metrics.scheduled_rebalance_ms,
    )
    yield _gauge(
        "sparkherd_protocol_version",
        "the group's protocol version (0 eager, 1-3 cooperative)",
        metrics.protocol_version,
    )
    state = GaugeMetricFamily(
        "sparkherd_worker_state", "1 for this worker's state", labels=["state"]
    )
    state.add_metric([metrics.state.value], 1)
    yield state
    yield _counter(
        "sparkherd_self_fencings",
        "times this worker stopped its work because the coordinator was out of reach",
        metrics.self_fencings,
    )
    yield _counter(
        "sparkherd_group_failed_rounds",
        "JoinGroup or SyncGroup rounds that failed; one that keeps rising is a group that "
        "cannot settle (/health says so after three in a row)",
        metrics.failed_rounds,
    )
    yield _counter(
        "sparkherd_task_fencings",
        "queries stopped because another worker claimed their task",
        runtime.fenced,
    )
    yield _counter("sparkherd_hand_offs", "planned stops that handed work over", metrics.hand_offs)
    yield _counter(
        "sparkherd_auto_restarts",
        "automatic restarts of failed connectors and tasks begun",
        metrics.auto_restarts,
    )
    yield _counter(
        "sparkherd_config_records_refused",
        "config topic records read and not applied: a connector or task config the "
        "worker's checks refuse (written by someone other than the leader), or no record "
        "of that topic at all",
        metrics.refused_config_records,
    )


def _progress_metrics(progress: Mapping[ConnectorTaskId, TaskProgress]) -> Iterator[Metric]:
    labels = ["connector", "task"]
    rows = CounterMetricFamily(
        "sparkherd_task_input_rows",
        "rows read by the batches committed since the task started here",
        labels=labels,
    )
    gauges = {
        name: GaugeMetricFamily(name, doc, labels=labels)
        for name, doc in (
            ("sparkherd_task_input_rows_per_second", "the newest trigger's input rate"),
            ("sparkherd_task_processed_rows_per_second", "the newest trigger's processing rate"),
            ("sparkherd_task_batch_duration_ms", "the newest committed batch's duration"),
            ("sparkherd_task_last_committed_batch_id", "the newest committed batch"),
            ("sparkherd_task_source_lag", "records the source has beyond what was read"),
        )
    }
    for task, seen in sorted(progress.items()):
        key = [task.connector, str(task.task)]
        rows.add_metric(key, seen.input_rows_total)
        gauges["sparkherd_task_input_rows_per_second"].add_metric(key, seen.input_rows_per_second)
        gauges["sparkherd_task_processed_rows_per_second"].add_metric(
            key, seen.processed_rows_per_second
        )
        gauges["sparkherd_task_batch_duration_ms"].add_metric(key, seen.batch_duration_ms)
        gauges["sparkherd_task_last_committed_batch_id"].add_metric(key, seen.batch_id)
        if seen.source_lag is not None:
            gauges["sparkherd_task_source_lag"].add_metric(key, seen.source_lag)
    yield rows
    yield from gauges.values()


def _lag_metrics(lags: Mapping[ConnectorTaskId, TriggerLag]) -> Iterator[Metric]:
    family = GaugeMetricFamily(
        "sparkherd_task_trigger_lag_seconds",
        "how long the task's next batch is overdue: the time since its newest commit "
        "beyond one trigger interval (0 on cadence or waiting for data)",
        labels=["connector", "task"],
    )
    for task, lag in sorted(lags.items()):
        family.add_metric([task.connector, str(task.task)], lag.lag_s)
    yield family
    behind = len(tasks_behind(lags))
    yield _gauge(
        "sparkherd_worker_tasks_behind",
        "running tasks whose trigger lag is over one interval (and over 1 s)",
        behind,
    )
    yield _gauge(
        "sparkherd_worker_overloaded",
        "1 while a running task is behind its trigger: the worker has more tasks than its "
        "driver can run on cadence (/health says which)",
        int(behind > 0),
    )


TASK_ERROR_METRICS: Final = {
    "total_record_errors": "records that hit an error",
    "total_record_failures": "failed attempts at records, retries included",
    "total_records_skipped": "records left out of the output for an error",
    "total_errors_logged": "errors written to the log",
    "deadletterqueue_produce_requests": "records sent to the dead letter queue",
    "deadletterqueue_produce_failures": "records the dead letter queue did not take",
    "last_error_timestamp": "when the task last hit an error, epoch ms (0: never)",
}
"""Connect's `task-error-metrics` attributes, as Strimzi names their series after
`kafka_connect_task_error_`; the counts are of the batches the checkpoint committed."""


def _error_figures(totals: BatchErrors) -> dict[str, int]:
    """Each of `TASK_ERROR_METRICS`' values for one task."""
    return {
        "total_record_errors": totals.record_errors,
        "total_record_failures": totals.record_failures,
        "total_records_skipped": totals.records_skipped,
        "total_errors_logged": totals.errors_logged,
        "deadletterqueue_produce_requests": totals.deadletterqueue_produce_requests,
        "deadletterqueue_produce_failures": totals.deadletterqueue_produce_failures,
        "last_error_timestamp": totals.last_error_timestamp_ms or 0,
    }


def _error_metrics(errors: Mapping[ConnectorTaskId, BatchErrors]) -> Iterator[Metric]:
    families = {
        name: GaugeMetricFamily(
            f"kafka_connect_task_error_{name}", doc, labels=["connector", "task"]
        )
        for name, doc in TASK_ERROR_METRICS.items()
    }
    for task, totals in sorted(errors.items()):
        for name, value in _error_figures(totals).items():
            families[name].add_metric([task.connector, str(task.task)], value)
    yield from families.values()


def metrics_router(runtime: RuntimeMetrics) -> APIRouter:
    router = APIRouter()

    @router.get("/metrics", response_class=Response)
    async def metrics(herder: HerderDep) -> Response:
        """Extension: Prometheus text format, Kafka Connect's metric names."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(WorkerCollector(herder.metrics(), runtime))
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return router
