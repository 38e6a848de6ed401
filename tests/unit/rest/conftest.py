"""The whole REST app, as `create_app` wires it, serving a fake herder."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from protocol.messages import ConnectorTaskId
from rest.app import create_app
from rest.herder_api import provide_herder
from rest.loggers import LoggerLevels
from rest.security import RestSecurity
from tests.support.plugins import plugins_for
from tests.unit.rest.fake_herder import FakeHerder
from worker.admission.registry import PluginRegistry
from worker.plugins.task_state import StartupCounts
from worker.records.errors.task_errors import BatchErrors
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import TriggerLag


@dataclass
class FakeRuntime:
    """What `/metrics` reads of the task runtime."""

    startups: StartupCounts = field(default_factory=StartupCounts)
    fenced: int = 0
    seen: dict[ConnectorTaskId, TaskProgress] = field(default_factory=dict)
    counted: dict[ConnectorTaskId, BatchErrors] = field(default_factory=dict)
    lags: dict[ConnectorTaskId, TriggerLag] = field(default_factory=dict)

    def progress(self) -> dict[ConnectorTaskId, TaskProgress]:
        return dict(self.seen)

    def errors(self) -> dict[ConnectorTaskId, BatchErrors]:
        return dict(self.counted)

    def trigger_lags(self) -> dict[ConnectorTaskId, TriggerLag]:
        return dict(self.lags)


RUNTIME = FakeRuntime()


@pytest.fixture
def runtime() -> FakeRuntime:
    RUNTIME.startups, RUNTIME.fenced, RUNTIME.seen, RUNTIME.counted = StartupCounts(), 0, {}, {}
    RUNTIME.lags = {}
    return RUNTIME


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    """One app for all tests: building one takes a quarter of a second, and each test
    gives it a herder of its own."""
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    return create_app(
        FakeHerder(),
        lambda: None,
        "test-commit",
        plugins_for(PluginRegistry(), checkpoints),
        LoggerLevels(),
        RestSecurity(),
        RUNTIME,
    )


@pytest.fixture
def herder() -> FakeHerder:
    return FakeHerder()


@pytest.fixture
def client(app: FastAPI, herder: FakeHerder) -> TestClient:
    provide_herder(app, herder)
    return TestClient(app)
