"""Every REST answer that carries a connector's config hides its secrets, and a config
read that way can be PUT or PATCHed back without losing them."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.unit.rest.fake_herder import FakeHerder

PASSWORD = "s3cret-Pa55"
CONFIG = {
    "connector.class": "generator",
    "connection.password": PASSWORD,
    "kafka.sasl.jaas.config": f'ScramLoginModule required password="{PASSWORD}";',
    "kafka.ssl.truststore.password": "${file:/etc/kafka/secrets.properties:truststore}",
}
SHOWN = {
    **CONFIG,
    "connection.password": "[hidden]",
    "kafka.sasl.jaas.config": "[hidden]",
    "name": "gen",
}


def created(client: TestClient) -> None:
    answer = client.post("/connectors", json={"name": "gen", "config": CONFIG})
    assert answer.status_code == 201
    assert answer.json()["config"] == SHOWN


def test_no_answer_shows_a_secret(client: TestClient) -> None:
    created(client)
    answers = [
        client.get("/connectors/gen"),
        client.get("/connectors/gen/config"),
        client.get("/connectors/gen/tasks"),
        client.get("/connectors", params={"expand": "info"}),
    ]
    for answer in answers:
        assert answer.status_code == 200
        assert PASSWORD not in answer.text
    assert answers[1].json() == SHOWN
    assert answers[2].json()[0]["config"]["connection.password"] == "[hidden]"


def test_a_shown_config_put_back_keeps_the_secrets(client: TestClient, herder: FakeHerder) -> None:
    created(client)
    shown = client.get("/connectors/gen/config").json()
    answer = client.put("/connectors/gen/config", json={**shown, "rows.per.second": "5"})
    assert answer.status_code == 200
    assert herder.configs["gen"]["connection.password"] == PASSWORD
    assert herder.configs["gen"]["kafka.sasl.jaas.config"] == CONFIG["kafka.sasl.jaas.config"]
    assert herder.configs["gen"]["rows.per.second"] == "5"


def test_a_patch_keeps_a_hidden_secret_replaces_a_new_one_and_removes_a_null(
    client: TestClient, herder: FakeHerder
) -> None:
    created(client)
    patch = {"connection.password": "[hidden]", "kafka.sasl.jaas.config": None}
    assert client.patch("/connectors/gen/config", json=patch).status_code == 200
    assert herder.configs["gen"]["connection.password"] == PASSWORD
    assert "kafka.sasl.jaas.config" not in herder.configs["gen"]
    assert client.patch("/connectors/gen/config", json={"connection.password": "n3w"}).is_success
    assert herder.configs["gen"]["connection.password"] == "n3w"


def test_a_new_connector_given_a_hidden_secret_is_refused(
    client: TestClient, herder: FakeHerder
) -> None:
    config = {**CONFIG, "connection.password": "[hidden]"}
    for answer in (
        client.post("/connectors", json={"name": "new", "config": config}),
        client.put("/connectors/new/config", json=config),
    ):
        assert answer.status_code == 400
        assert "connection.password is [hidden]" in answer.json()["message"]
    assert "new" not in herder.configs
