"""The whole REST app, as `create_app` wires it, serving a fake herder."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from rest.app import create_app
from rest.herder_api import provide_herder
from rest.loggers import LoggerLevels
from rest.security import RestSecurity
from tests.support.plugins import plugins_for
from tests.unit.rest.fake_herder import FakeHerder
from worker.plugin_registry import PluginRegistry


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
    )


@pytest.fixture
def herder() -> FakeHerder:
    return FakeHerder()


@pytest.fixture
def client(app: FastAPI, herder: FakeHerder) -> TestClient:
    provide_herder(app, herder)
    return TestClient(app)
