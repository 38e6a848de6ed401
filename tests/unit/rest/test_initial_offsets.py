"""KIP-995: `POST /connectors` with `initial_offsets`: checked with the config before
anything is written, put in place before the connector's records, and a 400 leaves no
connector behind."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.rest.fake_herder import FakeHerder
from worker.runtime.task_offsets import InitialOffsets

CONFIG = {"connector.class": "generator", "tasks.max": "2"}


def create(client: TestClient, offsets: Any) -> Any:
    return client.post(
        "/connectors", json={"name": "gen", "config": CONFIG, "initial_offsets": offsets}
    )


def test_the_tasks_start_from_the_initial_offsets_given(
    client: TestClient, herder: FakeHerder
) -> None:
    answer = create(client, [{"partition": {"task": 1, "source": 0}, "offset": {"offset": 9}}])
    plain = client.post("/connectors", json={"name": "plain", "config": CONFIG})

    assert answer.status_code == 201
    assert answer.json()["offsets_status"].startswith("The offsets for this connector have been")
    assert plain.status_code == 201
    assert "offsets_status" not in plain.json()
    assert herder.runtime.seeded == [("gen", InitialOffsets(marks={1: {"offset": 9}}))]


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ([], "initial_offsets cannot be empty"),
        ([{"partition": {"task": 2}, "offset": {"offset": 1}}], "has no task 2"),
        ([{"partition": {"task": 0}, "offset": {"offset": -1}}], "initial_offsets[0].offset"),
        ([{"partition": {"task": 0}}], "initial_offsets.0.offset: Field required"),
        ({"task": 0}, "initial_offsets: Input should be a valid list"),
    ],
)
def test_bad_initial_offsets_are_a_400_and_nothing_is_created(
    client: TestClient, herder: FakeHerder, offsets: Any, message: str
) -> None:
    answer = create(client, offsets)

    assert answer.status_code == 400
    assert message in answer.json()["message"]
    assert client.get("/connectors/gen").status_code == 404
    assert herder.runtime.seeded == []


def test_a_name_that_holds_offsets_already_is_a_400_and_nothing_is_created(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.runtime.holding.add("gen")

    answer = create(client, [{"partition": {"task": 0}, "offset": {"offset": 1}}])

    assert answer.status_code == 400
    assert "has offsets already" in answer.json()["message"]
    assert client.get("/connectors/gen").status_code == 404


def test_a_connector_bound_to_files_refuses_initial_offsets(
    client: TestClient, herder: FakeHerder
) -> None:
    offsets = [{"partition": {"task": 0}, "offset": {"logOffset": 3}}]
    body = {"name": "gen", "config": {**CONFIG, "files": "in"}, "initial_offsets": offsets}

    answer = client.post("/connectors", json=body)

    assert answer.status_code == 400
    assert "cannot start from offsets given at create" in answer.json()["message"]
    assert client.get("/connectors/gen").status_code == 404
    assert herder.runtime.seeded == []


def test_an_invalid_config_is_refused_before_its_offsets_are_looked_at(
    client: TestClient, herder: FakeHerder
) -> None:
    answer = client.post(
        "/connectors",
        json={"name": "gen", "config": {"tasks.max": "1"}, "initial_offsets": []},
    )

    assert answer.status_code == 400
    assert "connector.class" in answer.json()["message"]
    assert herder.runtime.seeded == []
