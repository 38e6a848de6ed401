"""KIP-891: every connector and task state carries the version of the connector's plugin,
as Kafka Connect 4.1 shows it, in every answer that holds a state."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from protocol.messages import ConnectorTaskId
from rest.app import create_app
from rest.loggers import LoggerLevels
from rest.security import RestSecurity
from tests.support.plugins import plugins_for
from tests.unit.rest.conftest import RUNTIME
from tests.unit.rest.fake_herder import FakeHerder
from worker.admission.registry import PluginRegistry
from worker.connectors.generator import GeneratorConnector
from worker.plugins.task_state import TaskState

SPARKHERD = version("sparkherd")


@pytest.fixture
def versioned(tmp_path: Path, herder: FakeHerder) -> TestClient:
    """The app over a worker that has the generator plugin."""
    plugins = plugins_for(PluginRegistry([GeneratorConnector]), tmp_path)
    app = create_app(herder, lambda: None, "c", plugins, LoggerLevels(), RestSecurity(), RUNTIME)
    return TestClient(app)


def test_every_state_carries_the_plugin_version_when_the_worker_has_the_plugin(
    versioned: TestClient, herder: FakeHerder
) -> None:
    herder.add("gen", tasks=2)
    herder.add("gone", tasks=1, extra={"connector.class": "com.example.Gone"})
    herder.report("gen", TaskState.RUNNING)
    herder.report(ConnectorTaskId("gen", 0), TaskState.RUNNING)

    status = versioned.get("/connectors/gen/status").json()
    expanded = versioned.get("/connectors?expand=status").json()["gen"]["status"]
    task = versioned.get("/connectors/gen/tasks/1/status").json()
    restarting = versioned.post("/connectors/gen/restart?includeTasks=true").json()

    for body in (status, expanded, restarting):
        assert body["connector"]["version"] == SPARKHERD
        assert [t["version"] for t in body["tasks"]] == [SPARKHERD, SPARKHERD]
    assert task["version"] == SPARKHERD
    gone = versioned.get("/connectors/gone/status").json()
    assert "version" not in gone["connector"]
    assert "version" not in gone["tasks"][0]
