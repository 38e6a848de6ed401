"""`/health` (KIP-1017) and `/workers` read the herder through the app's dependency."""

from __future__ import annotations

from fastapi.testclient import TestClient

from herder.views import WorkerState
from protocol.messages import Allocation, ConnectorTaskId
from tests.unit.rest.conftest import FakeRuntime
from tests.unit.rest.fake_herder import WORKER_ID, FakeHerder
from worker.runtime.trigger_lag import OVERLOADED_MARK, TriggerLag


def test_health_follows_the_herder(client: TestClient, herder: FakeHerder) -> None:
    assert client.get("/health").status_code == 200
    herder.ready = False
    starting = client.get("/health")
    assert starting.status_code == 503
    assert starting.json()["status"] == "starting"
    herder.unhealthy = "fenced: the group coordinator did not answer in time"
    assert client.get("/health").json() == {
        "status": "unhealthy",
        "message": "fenced: the group coordinator did not answer in time",
    }
    assert client.get("/health").status_code == 500


def test_a_warming_worker_says_so(client: TestClient, herder: FakeHerder) -> None:
    herder.ready, herder.state = False, WorkerState.WARMING
    answer = client.get("/health")
    assert answer.status_code == 503
    assert answer.json() == {
        "status": "starting",
        "message": "Worker is warming up (starting Spark) before it joins the group.",
    }
    assert client.get("/workers").json()["workers"][0]["state"] == "warming"


def test_workers_shows_the_herder_view(client: TestClient, herder: FakeHerder) -> None:
    herder.leader_url = "http://10.0.0.2:8083"
    herder.owned = Allocation.of(["gen"], [ConnectorTaskId("gen", 1), ConnectorTaskId("gen", 0)])
    assert client.get("/workers").json() == {
        "leader": "http://10.0.0.2:8083",
        "generation": 3,
        "protocol_version": 2,
        "scheduled_rebalance_ms": 0,
        "workers": [
            {
                "id": WORKER_ID,
                "url": f"http://{WORKER_ID}",
                "connectors": ["gen"],
                "tasks": ["gen-0", "gen-1"],
                "state": "running",
            }
        ],
    }


def test_an_overloaded_worker_stays_healthy_and_says_which_tasks_are_behind(
    client: TestClient, runtime: FakeRuntime
) -> None:
    runtime.lags = {
        ConnectorTaskId("gen", 0): TriggerLag(0.0, 2.0),
        ConnectorTaskId("gen", 1): TriggerLag(9.5, 2.0),
    }
    answer = client.get("/health")
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "healthy"
    assert body["message"].startswith("Worker has completed startup and is ready")
    assert f"{OVERLOADED_MARK} 1 of 2 running tasks are behind" in body["message"]
    assert "gen-1 9.5 s" in body["message"]
