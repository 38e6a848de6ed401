"""deploy/prometheus: the scrape examples reach /metrics on the REST port, every series
an alert reads is one the workers export, and the dead letter queue's alerts read a
task's error totals per series."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from herder.metrics import RebalanceView, WorkerMetrics
from herder.views import WorkerState
from protocol.messages import ConnectorTaskId
from rest.metrics import WorkerCollector
from worker.plugins.task_state import StartupCounts
from worker.records.errors.task_errors import BatchErrors
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import TriggerLag

PROMETHEUS = Path(__file__).resolve().parents[3] / "deploy" / "prometheus"
SERIES = re.compile(r"\b(?:kafka_connect|sparkherd)_[a-z_]+")
TASK_ERRORS = "kafka_connect_task_error_"


class Runtime:
    startups = StartupCounts()
    fenced = 0

    def progress(self) -> dict[ConnectorTaskId, TaskProgress]:
        return {ConnectorTaskId("c", 0): TaskProgress(1, 10, 1.0, 1.0, 100, 5)}

    def errors(self) -> dict[ConnectorTaskId, BatchErrors]:
        return {ConnectorTaskId("c", 0): BatchErrors(record_errors=1)}

    def trigger_lags(self) -> dict[ConnectorTaskId, TriggerLag]:
        return {ConnectorTaskId("c", 0): TriggerLag(3.0, 2.0)}


def exported() -> set[str]:
    metrics = WorkerMetrics(
        state=WorkerState.RUNNING,
        generation=1,
        protocol_version=2,
        scheduled_rebalance_ms=0,
        connectors={"c": "running"},
        tasks={ConnectorTaskId("c", 0): "failed"},
        rebalance=RebalanceView(1, False, 1.0, 1.0, 1.0),
        connector_startups=StartupCounts(),
        hand_offs=0,
        self_fencings=0,
        failed_rounds=0,
        auto_restarts=0,
        refused_config_records=0,
    )
    return {
        sample.name
        for family in WorkerCollector(metrics, Runtime()).collect()
        for sample in family.samples
    }


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((PROMETHEUS / name).read_text())
    return document


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in load("alerts.yaml")["spec"]["groups"] for rule in group["rules"]]


def test_every_alert_reads_series_the_workers_export() -> None:
    rules = alert_rules()
    assert {rule["alert"] for rule in rules} >= {
        "SparkherdConnectorFailed",
        "SparkherdTaskFailed",
        "SparkherdWorkerNotReady",
        "SparkherdDeadLetterQueueGrowing",
        "SparkherdDeadLetterQueueFailing",
    }
    names = exported()
    for rule in rules:
        used = set(SERIES.findall(rule["expr"]))
        assert used and used <= names, (rule["alert"], used - names)


def test_the_dead_letter_queue_alerts_take_the_increase_of_each_series_per_task() -> None:
    """A task's error totals come from its checkpoint, so a task that moves starts a
    series on its new worker at its old worker's total: an increase() of a sum over
    workers would see that as a jump, an increase() of each series does not."""
    by_name = {rule["alert"]: rule for rule in alert_rules()}
    for alert, series in (
        ("SparkherdDeadLetterQueueGrowing", "deadletterqueue_produce_requests"),
        ("SparkherdDeadLetterQueueFailing", "deadletterqueue_produce_failures"),
    ):
        expr = " ".join(by_name[alert]["expr"].split())
        window = re.search(rf"increase\({TASK_ERRORS}{series}\[(\d+)m\]\)", expr)
        assert window, expr
        assert expr.startswith("sum by (connector, task) (increase(") and expr.endswith(") > 0")
        assert by_name[alert]["labels"]["severity"] in {"warning", "major"}
        assert "{{ $labels.connector }}" in by_name[alert]["annotations"]["summary"]
    for rule in alert_rules():
        expr = rule["expr"]
        assert expr.count(TASK_ERRORS) == expr.count(f"increase({TASK_ERRORS}"), rule["alert"]


def test_the_scrape_examples_read_metrics_on_the_rest_port() -> None:
    endpoint = load("podmonitor.yaml")["spec"]["podMetricsEndpoints"][0]
    assert (endpoint["port"], endpoint["path"]) == ("rest", "/metrics")
    job = load("scrape-config.yaml")["scrape_configs"][0]
    assert job["metrics_path"] == "/metrics"
    assert all(target.endswith(":8083") for target in job["static_configs"][0]["targets"])
