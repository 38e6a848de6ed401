"""deploy/prometheus: the scrape examples reach /metrics on the REST port, and every
series an alert reads is one the workers export."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from herder.metrics import RebalanceView, WorkerMetrics
from herder.views import WorkerState
from protocol.messages import ConnectorTaskId
from rest.metrics import WorkerCollector
from worker.task_progress import TaskProgress
from worker.task_state import StartupCounts

PROMETHEUS = Path(__file__).resolve().parents[3] / "deploy" / "prometheus"
SERIES = re.compile(r"\b(?:kafka_connect|sparkherd)_[a-z_]+")


class Runtime:
    startups = StartupCounts()
    fenced = 0

    def progress(self) -> dict[ConnectorTaskId, TaskProgress]:
        return {ConnectorTaskId("c", 0): TaskProgress(1, 10, 1.0, 1.0, 100, 5)}


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
    )
    return {
        sample.name
        for family in WorkerCollector(metrics, Runtime()).collect()
        for sample in family.samples
    }


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((PROMETHEUS / name).read_text())
    return document


def test_every_alert_reads_series_the_workers_export() -> None:
    rules = [rule for group in load("alerts.yaml")["spec"]["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} >= {
        "SparkherdConnectorFailed",
        "SparkherdTaskFailed",
        "SparkherdWorkerNotReady",
    }
    names = exported()
    for rule in rules:
        used = set(SERIES.findall(rule["expr"]))
        assert used and used <= names, (rule["alert"], used - names)


def test_the_scrape_examples_read_metrics_on_the_rest_port() -> None:
    endpoint = load("podmonitor.yaml")["spec"]["podMetricsEndpoints"][0]
    assert (endpoint["port"], endpoint["path"]) == ("rest", "/metrics")
    job = load("scrape-config.yaml")["scrape_configs"][0]
    assert job["metrics_path"] == "/metrics"
    assert all(target.endswith(":8083") for target in job["static_configs"][0]["targets"])
