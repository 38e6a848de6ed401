"""`/connectors/...` against a fake herder: Connect's status codes, bodies and error shape,
and what each route hands the herder."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from herder.errors import HerderError
from herder.requests import RequestTimedOut, WorkerStopping
from herder.stores.config_records import RestartRequest, TargetState
from protocol.messages import ConnectorTaskId
from tests.unit.rest.fake_herder import WORKER_ID, FakeHerder
from worker.plugins.task_state import TaskState

GENERATOR = {"connector.class": "generator", "tasks.max": 2}


def error(status: int, message: str) -> dict[str, object]:
    return {"error_code": status, "message": message}


def task_ids(name: str, count: int) -> list[dict[str, object]]:
    return [{"connector": name, "task": i} for i in range(count)]


def test_create_answers_201_with_the_connector_and_its_location(
    client: TestClient, herder: FakeHerder
) -> None:
    answer = client.post(
        "/connectors", json={"name": "gen", "config": {**GENERATOR, "flag": True, "gone": None}}
    )
    assert answer.status_code == 201
    assert answer.headers["Location"] == "/connectors/gen"
    config = {"connector.class": "generator", "tasks.max": "2", "flag": "true", "gone": ""}
    assert answer.json() == {
        "name": "gen",
        "config": {**config, "name": "gen"},
        "tasks": task_ids("gen", 2),
        "type": "source",
    }
    assert herder.targets == {"gen": TargetState.STARTED}


@pytest.mark.parametrize(
    ("initial_state", "target"),
    [
        ("RUNNING", TargetState.STARTED),
        ("PAUSED", TargetState.PAUSED),
        ("STOPPED", TargetState.STOPPED),
    ],
)
def test_create_starts_in_the_initial_state_asked_for(
    client: TestClient, herder: FakeHerder, initial_state: str, target: TargetState
) -> None:
    body = {"name": "gen", "config": GENERATOR, "initial_state": initial_state}
    assert client.post("/connectors", json=body).status_code == 201
    assert herder.targets["gen"] is target


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml", None]
)
def test_a_body_declared_as_something_else_than_json_is_415_as_in_connect(
    client: TestClient, content_type: str | None
) -> None:
    body = json.dumps({"name": "gen", "config": GENERATOR})
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = client.post("/connectors", content=body, headers=headers)
    assert answer.status_code == 415
    assert answer.json()["error_code"] == 415
    assert "application/json" in answer.json()["message"]


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "application/x+json"])
def test_a_json_body_may_name_its_charset_or_a_json_suffix(
    client: TestClient, content_type: str
) -> None:
    body = json.dumps({"name": "gen", "config": GENERATOR})
    headers = {"Content-Type": content_type}
    assert client.post("/connectors", content=body, headers=headers).status_code == 201


def test_a_location_is_percent_encoded(client: TestClient) -> None:
    answer = client.post("/connectors", json={"name": "a b?", "config": GENERATOR})
    assert answer.status_code == 201
    assert answer.headers["Location"] == "/connectors/a%20b%3F"


def test_creating_an_existing_connector_answers_409(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen")
    answer = client.post("/connectors", json={"name": "gen", "config": GENERATOR})
    assert answer.status_code == 409
    assert answer.json() == error(409, "Connector gen already exists")


def test_an_invalid_config_answers_400(client: TestClient, herder: FakeHerder) -> None:
    answer = client.post("/connectors", json={"name": "gen", "config": {"tasks.max": 1}})
    assert answer.status_code == 400
    assert answer.json() == error(400, 'Missing required configuration "connector.class"')
    assert herder.configs == {}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"config": GENERATOR}, "name: Field required"),
        ({"name": "a/b", "config": GENERATOR}, "name: Value error, connector name must not"),
        ({"name": "gen", "config": "x"}, "config: Input should be a valid dictionary"),
        ({"name": "gen", "config": GENERATOR, "initial_state": "GONE"}, "initial_state: Input"),
    ],
)
def test_an_invalid_request_answers_400_naming_the_field(
    client: TestClient, herder: FakeHerder, body: dict[str, object], problem: str
) -> None:
    answer = client.post("/connectors", json=body)
    assert answer.status_code == 400
    assert answer.json()["error_code"] == 400
    assert answer.json()["message"].startswith(f"Invalid request: {problem}")
    assert herder.configs == {}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/connectors/nope"),
        ("GET", "/connectors/nope/config"),
        ("GET", "/connectors/nope/status"),
        ("GET", "/connectors/nope/tasks"),
        ("DELETE", "/connectors/nope"),
        ("PUT", "/connectors/nope/pause"),
        ("PUT", "/connectors/nope/resume"),
        ("PUT", "/connectors/nope/stop"),
        ("POST", "/connectors/nope/restart"),
        ("GET", "/connectors/nope/offsets"),
    ],
)
def test_an_unknown_connector_answers_404(client: TestClient, method: str, path: str) -> None:
    answer = client.request(method, path)
    assert answer.status_code == 404
    assert answer.json() == error(404, "Connector nope not found")


def test_patching_an_unknown_connector_answers_404(client: TestClient) -> None:
    answer = client.patch("/connectors/nope/config", json={"tasks.max": 1})
    assert answer.status_code == 404
    assert answer.json() == error(404, "Connector nope not found")


def test_a_follower_that_knows_no_leader_refuses_a_write_with_409(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.leads = False
    answer = client.post("/connectors", json={"name": "gen", "config": GENERATOR})
    assert answer.status_code == 409
    assert answer.json()["error_code"] == 409
    assert "the leader is not known yet" in answer.json()["message"]


@pytest.mark.parametrize(
    ("refusal", "status"), [(RequestTimedOut(90), 409), (WorkerStopping(), 503)]
)
def test_a_request_the_herder_could_not_serve_is_refused_with_its_reason(
    client: TestClient, herder: FakeHerder, refusal: HerderError, status: int
) -> None:
    herder.refusal = refusal
    answer = client.post("/connectors", json={"name": "gen", "config": GENERATOR})
    assert answer.status_code == status
    assert answer.json() == error(status, str(refusal))


def test_list_gives_names_in_order(client: TestClient, herder: FakeHerder) -> None:
    herder.add("b")
    herder.add("a")
    assert client.get("/connectors").json() == ["a", "b"]


def test_list_expanded_gives_what_was_asked_for_and_ignores_unknown_expansions(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.add("gen", tasks=1)
    herder.report("gen", TaskState.RUNNING)
    answer = client.get("/connectors?expand=status&expand=info&expand=bogus").json()
    assert list(answer) == ["gen"]
    assert answer["gen"]["status"]["connector"] == {"state": "RUNNING", "worker_id": WORKER_ID}
    assert answer["gen"]["info"]["tasks"] == task_ids("gen", 1)
    only_status = client.get("/connectors?expand=status").json()
    assert list(only_status["gen"]) == ["status"], "what was not asked for is left out"
    assert client.get("/connectors?expand=bogus").json() == {"gen": {}}


def test_get_connector_and_its_config(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", tasks=3)
    config = {"connector.class": "generator", "tasks.max": "3", "name": "gen"}
    assert client.get("/connectors/gen").json() == {
        "name": "gen",
        "config": config,
        "tasks": task_ids("gen", 3),
        "type": "source",
    }
    assert client.get("/connectors/gen/config").json() == config


def test_put_config_creates_with_201_then_updates_with_200(
    client: TestClient, herder: FakeHerder
) -> None:
    created = client.put("/connectors/gen/config", json=GENERATOR)
    assert created.status_code == 201
    assert created.headers["Location"] == "/connectors/gen"
    assert created.json()["tasks"] == task_ids("gen", 2)
    updated = client.put("/connectors/gen/config", json={**GENERATOR, "tasks.max": 1})
    assert updated.status_code == 200
    assert "Location" not in updated.headers
    assert updated.json()["config"]["tasks.max"] == "1"
    assert updated.json()["tasks"] == task_ids("gen", 1)


def test_put_config_with_another_name_answers_400(client: TestClient, herder: FakeHerder) -> None:
    answer = client.put("/connectors/gen/config", json={**GENERATOR, "name": "other"})
    assert answer.status_code == 400
    assert answer.json() == error(
        400,
        "Connector name configuration (other) doesn't match connector name in the URL (gen)",
    )
    assert herder.configs == {}


def test_patch_config_merges_and_a_null_removes_a_key(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.add("gen", extra={"rows.per.second": "10"})
    answer = client.patch(
        "/connectors/gen/config", json={"rows.per.second": None, "tasks.max": 2, "x": False}
    )
    assert answer.status_code == 200
    assert answer.json()["config"] == {
        "connector.class": "generator",
        "tasks.max": "2",
        "x": "false",
        "name": "gen",
    }
    assert answer.json()["tasks"] == task_ids("gen", 2)


def test_status_shows_the_connector_and_each_task(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", tasks=2)
    herder.report("gen", TaskState.RUNNING)
    herder.report(ConnectorTaskId("gen", 1), TaskState.FAILED, trace="boom")
    assert client.get("/connectors/gen/status").json() == {
        "name": "gen",
        "connector": {"state": "RUNNING", "worker_id": WORKER_ID},
        "tasks": [
            {"id": 0, "state": "UNASSIGNED", "worker_id": None, "started_at": None},
            {
                "id": 1,
                "state": "FAILED",
                "worker_id": WORKER_ID,
                "trace": "boom",
                "started_at": None,
            },
        ],
        "type": "source",
    }


def test_a_connector_no_worker_reported_is_unassigned(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.add("gen", tasks=0)
    connector = client.get("/connectors/gen/status").json()["connector"]
    assert connector == {"state": "UNASSIGNED", "worker_id": None}, "no trace: none, not null"


def test_tasks_list_each_task_with_its_config(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", tasks=2)
    answer = client.get("/connectors/gen/tasks").json()
    assert [task["id"] for task in answer] == task_ids("gen", 2)
    assert [task["config"]["task.id"] for task in answer] == ["0", "1"]


def test_task_status_and_an_unknown_task(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", tasks=1)
    herder.report(ConnectorTaskId("gen", 0), TaskState.RUNNING)
    answer = client.get("/connectors/gen/tasks/0/status")
    assert answer.json() == {
        "id": 0,
        "state": "RUNNING",
        "worker_id": WORKER_ID,
        "started_at": None,
    }
    missing = client.get("/connectors/gen/tasks/5/status")
    assert missing.status_code == 404
    assert missing.json() == error(404, "Task gen-5 not found")


@pytest.mark.parametrize("task", ["abc", "-1", "1.0", "%C2%B2", "1" * 30])
def test_a_task_segment_that_is_no_task_number_is_404_as_in_connect(
    client: TestClient, herder: FakeHerder, task: str
) -> None:
    herder.add("gen", tasks=2)
    for answer in (
        client.get(f"/connectors/gen/tasks/{task}/status"),
        client.post(f"/connectors/gen/tasks/{task}/restart"),
    ):
        assert answer.status_code == 404, answer.text
        assert answer.json()["error_code"] == 404
    assert herder.restarts == []


def test_restarting_a_task_answers_204(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", tasks=2)
    answer = client.post("/connectors/gen/tasks/1/restart")
    assert answer.status_code == 204
    assert answer.content == b""
    assert herder.restarts == [RestartRequest("gen", task=1)]
    assert client.post("/connectors/gen/tasks/2/restart").status_code == 404


def test_a_plain_connector_restart_answers_204(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen")
    answer = client.post("/connectors/gen/restart")
    assert answer.status_code == 204
    assert answer.content == b""
    assert herder.restarts == [RestartRequest("gen")]


@pytest.mark.parametrize(
    ("query", "recorded", "reported", "shown"),
    [
        (
            "includeTasks=true",
            RestartRequest("gen", include_tasks=True),
            ["RUNNING", "RUNNING", "RUNNING"],
            ["RESTARTING", "RESTARTING", "RESTARTING"],
        ),
        (
            "includeTasks=true&onlyFailed=true",
            RestartRequest("gen", include_tasks=True, only_failed=True),
            ["RUNNING", "RUNNING", "FAILED"],
            ["RUNNING", "RUNNING", "RESTARTING"],
        ),
        (
            "onlyFailed=true",
            RestartRequest("gen", only_failed=True),
            ["FAILED", "FAILED", "FAILED"],
            ["RESTARTING", "FAILED", "FAILED"],
        ),
    ],
)
def test_a_restart_with_options_answers_202_showing_what_restarts(
    client: TestClient,
    herder: FakeHerder,
    query: str,
    recorded: RestartRequest,
    reported: list[str],
    shown: list[str],
) -> None:
    """`reported` and `shown`: the states of the connector and then of its two tasks."""
    herder.add("gen", tasks=2)
    herder.report("gen", TaskState(reported[0]))
    for task, state in enumerate(reported[1:]):
        herder.report(ConnectorTaskId("gen", task), TaskState(state))
    answer = client.post(f"/connectors/gen/restart?{query}")
    assert answer.status_code == 202
    assert herder.restarts == [recorded]
    status = answer.json()
    assert [status["connector"]["state"]] + [t["state"] for t in status["tasks"]] == shown


@pytest.mark.parametrize(
    ("action", "status", "target"),
    [
        ("pause", 202, TargetState.PAUSED),
        ("resume", 202, TargetState.STARTED),
        ("stop", 204, TargetState.STOPPED),
    ],
)
def test_pause_resume_and_stop_set_the_target_state(
    client: TestClient, herder: FakeHerder, action: str, status: int, target: TargetState
) -> None:
    herder.add(
        "gen", target=TargetState.PAUSED if target is TargetState.STARTED else TargetState.STARTED
    )
    answer = client.put(f"/connectors/gen/{action}")
    assert answer.status_code == status
    assert answer.content == b""
    assert herder.targets["gen"] is target


def test_delete_answers_204_and_the_connector_is_gone(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.add("gen")
    answer = client.delete("/connectors/gen")
    assert answer.status_code == 204
    assert answer.content == b""
    assert client.get("/connectors").json() == []
    assert client.get("/connectors/gen").status_code == 404
