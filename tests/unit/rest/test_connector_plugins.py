"""`/connector-plugins`: Connect's listing, schema and validation shapes, no herder needed."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field, SecretStr, model_validator

from rest.connector_plugins_routes import connect_type, connector_plugins_router
from rest.errors import error_response
from tests.support.plugins import plugins_for
from worker.admission.registry import PluginRegistry, qualified_name
from worker.connectors.generator import GeneratorConnector
from worker.plugins.api import Connector, Task

GENERATOR = qualified_name(GeneratorConnector)
AUTO_RESTART_KEYS = [
    "auto.restart.enabled",
    "auto.restart.max.attempts",
    "auto.restart.initial.backoff.ms",
    "auto.restart.max.backoff.ms",
]
FRAMEWORK_KEYS = [
    "connector.class",
    "connector.plugin.version",
    "tasks.max",
    "key.converter.plugin.version",
    "value.converter.plugin.version",
    "header.converter.plugin.version",
    *AUTO_RESTART_KEYS,
    "transforms",
    "predicates",
]
GENERATOR_KEYS = [
    *FRAMEWORK_KEYS,
    "rows.per.second",
    "batch.interval.ms",
    "output.path",
    "output.format",
]


class AuditSinkSettings(BaseModel):
    password: SecretStr = Field(alias="audit.password", description="Audit store password")
    topics: list[str] = Field(default_factory=lambda: ["events", "alerts"], alias="topics")
    batch_size: int = Field(default=100, alias="batch.size", ge=1)
    compress: bool = Field(default=False, alias="compress")
    ratio: float | None = Field(default=None, alias="sample.ratio")

    @model_validator(mode="after")
    def _large_batches_are_compressed(self) -> AuditSinkSettings:
        if self.batch_size > 500 and not self.compress:
            raise ValueError("batches above 500 rows need compress=true")
        return self


class AuditSinkConnector(Connector):
    """A sink shipped by no installed distribution, with one setting of each kind."""

    name = "audit-sink"
    connector_type = "sink"
    config_model = AuditSinkSettings

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return [dict(config)]

    def create_task(self) -> Task:
        raise NotImplementedError("never started in unit tests")


AUDIT_SINK = qualified_name(AuditSinkConnector)


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()
    app.include_router(
        connector_plugins_router(
            plugins_for(PluginRegistry([GeneratorConnector, AuditSinkConnector]), Path("/ckpt"))
        )
    )

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return error_response(400, f"Invalid request: {exc.errors()[0]['msg']}")

    return TestClient(app)


def configs_by_name(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["definition"]["name"]: entry for entry in body["configs"]}


def errors_by_name(body: dict[str, Any]) -> dict[str, list[str]]:
    return {name: entry["value"]["errors"] for name, entry in configs_by_name(body).items()}


@pytest.mark.parametrize("query", ["", "?connectorsOnly=true"])
def test_plugins_are_listed_by_class_and_alias_with_the_version_of_their_distribution(
    client: TestClient, query: str
) -> None:
    response = client.get(f"/connector-plugins{query}")

    assert response.status_code == 200
    assert response.json() == [
        {"class": AUDIT_SINK, "type": "sink", "alias": "audit-sink"},
        {
            "class": GENERATOR,
            "type": "source",
            "version": version("sparkherd"),
            "alias": "generator",
        },
    ]


@pytest.mark.parametrize("plugin", ["generator", "GeneratorConnector", GENERATOR])
def test_a_plugin_schema_lists_the_framework_settings_then_the_plugin_own(
    client: TestClient, plugin: str
) -> None:
    response = client.get(f"/connector-plugins/{plugin}/config")

    assert response.status_code == 200
    definitions = {d["name"]: d for d in response.json()}
    assert list(definitions) == GENERATOR_KEYS
    assert definitions["output.path"] == {
        "name": "output.path",
        "type": "STRING",
        "required": True,
        "default_value": None,
        "importance": "HIGH",
        "documentation": "",
        "group": None,
        "width": "NONE",
        "display_name": "output.path",
        "dependents": [],
        "order": -1,
    }
    tasks_max = definitions["tasks.max"]
    assert (tasks_max["type"], tasks_max["required"], tasks_max["default_value"]) == (
        "INT",
        False,
        "1",
    )
    assert tasks_max["importance"] == "MEDIUM"


def test_a_plugin_schema_maps_each_annotation_to_a_connect_type_and_default(
    client: TestClient,
) -> None:
    definitions = client.get("/connector-plugins/audit-sink/config").json()

    assert [(d["name"], d["type"], d["default_value"]) for d in definitions] == [
        ("connector.class", "STRING", None),
        ("connector.plugin.version", "STRING", None),
        ("tasks.max", "INT", "1"),
        ("key.converter.plugin.version", "STRING", None),
        ("value.converter.plugin.version", "STRING", None),
        ("header.converter.plugin.version", "STRING", None),
        ("auto.restart.enabled", "BOOLEAN", None),
        ("auto.restart.max.attempts", "INT", None),
        ("auto.restart.initial.backoff.ms", "INT", None),
        ("auto.restart.max.backoff.ms", "INT", None),
        ("transforms", "LIST", ""),
        ("predicates", "LIST", ""),
        ("audit.password", "PASSWORD", None),
        ("topics", "LIST", "events,alerts"),
        ("batch.size", "INT", "100"),
        ("compress", "BOOLEAN", "false"),
        ("sample.ratio", "DOUBLE", None),
    ]
    assert definitions[12]["documentation"] == "Audit store password"


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, "STRING"),
        (Annotated[int, Field(ge=1)] | None, "INT"),
        (tuple[int, ...], "LIST"),
        (type[Connector], "CLASS"),
        (Literal["parquet", "json"], "STRING"),
        (Path, "STRING"),
        (int | str, "STRING"),
    ],
)
def test_annotations_map_to_the_closest_connect_type_else_string(
    annotation: Any, expected: str
) -> None:
    assert connect_type(annotation) == expected


@pytest.mark.parametrize("plugin", ["nope", "no.such.Plugin"])
def test_an_unknown_plugin_has_no_schema(client: TestClient, plugin: str) -> None:
    response = client.get(f"/connector-plugins/{plugin}/config")

    assert response.status_code == 404
    assert response.json()["error_code"] == 404
    assert "Unknown connector plugin" in response.json()["message"]


def test_a_valid_config_has_no_errors_and_shows_given_values_else_defaults(
    client: TestClient,
) -> None:
    response = client.put(
        "/connector-plugins/generator/config/validate",
        json={"tasks.max": 3, "output.path": "/data/out", "not.a.setting": "x"},
    )

    assert response.status_code == 200
    body = response.json()
    assert (body["name"], body["error_count"], body["groups"]) == (GENERATOR, 0, [])
    values = {name: entry["value"] for name, entry in configs_by_name(body).items()}
    assert list(values) == GENERATOR_KEYS
    assert values["connector.class"]["value"] == "generator"
    assert values["tasks.max"] == {
        "name": "tasks.max",
        "value": "3",
        "recommended_values": [],
        "errors": [],
        "visible": True,
    }
    assert values["output.format"]["value"] == "parquet"


def test_every_invalid_setting_is_reported_in_one_answer(client: TestClient) -> None:
    response = client.put(
        "/connector-plugins/generator/config/validate",
        json={"connector.class": "generator", "tasks.max": "0", "rows.per.second": -5},
    )

    assert response.status_code == 200
    body = response.json()
    errors = {name: messages for name, messages in errors_by_name(body).items() if messages}
    assert sorted(errors) == ["output.path", "rows.per.second", "tasks.max"]
    assert errors["output.path"] == ["missing required value"]
    assert "greater than 0" in errors["rows.per.second"][0]
    assert body["error_count"] == 3
    assert configs_by_name(body)["output.path"]["value"]["value"] is None


def test_a_problem_with_the_config_as_a_whole_is_counted_under_connector_class(
    client: TestClient,
) -> None:
    response = client.put(
        "/connector-plugins/audit-sink/config/validate",
        json={"audit.password": "s3cret", "batch.size": 1000},
    )

    body = response.json()
    assert body["error_count"] == 1
    [message] = errors_by_name(body)["connector.class"]
    assert "batches above 500 rows need compress=true" in message
    assert configs_by_name(body)["audit.password"]["value"]["value"] == "[hidden]"


@pytest.mark.parametrize("included", ["generator", "GeneratorConnector", GENERATOR])
def test_connector_class_in_the_body_may_name_the_plugin_any_way(
    client: TestClient, included: str
) -> None:
    response = client.put(
        f"/connector-plugins/{GENERATOR}/config/validate",
        json={"connector.class": included, "output.path": "/data/out"},
    )

    assert response.status_code == 200
    assert response.json()["error_count"] == 0


@pytest.mark.parametrize("included", ["audit-sink", "no.such.Plugin"])
def test_connector_class_in_the_body_naming_another_plugin_is_a_bad_request(
    client: TestClient, included: str
) -> None:
    response = client.put(
        "/connector-plugins/generator/config/validate",
        json={"connector.class": included, "output.path": "/data/out"},
    )

    assert response.status_code == 400
    assert response.json()["message"] == (
        f"Included connector type {included} does not match request type generator"
    )


@pytest.mark.parametrize("included", [None, "", "  "])
def test_an_empty_connector_class_in_the_body_is_named_as_such(
    client: TestClient, included: str | None
) -> None:
    response = client.put(
        "/connector-plugins/generator/config/validate",
        json={"connector.class": included, "output.path": "/data/out"},
    )

    assert response.status_code == 400
    assert response.json()["message"] == (
        "connector.class is empty: leave it out, or name the plugin (generator)"
    )


def test_validating_for_an_unknown_plugin_is_not_found(client: TestClient) -> None:
    response = client.put("/connector-plugins/nope/config/validate", json={})

    assert response.status_code == 404
    assert response.json()["error_code"] == 404


@pytest.mark.parametrize("body", [["output.path"], {"output.path": {"nested": 1}}, "text"])
def test_a_body_that_is_not_a_flat_json_object_is_a_bad_request(
    client: TestClient, body: object
) -> None:
    response = client.put("/connector-plugins/generator/config/validate", json=body)

    assert response.status_code == 400
    assert response.json()["error_code"] == 400
