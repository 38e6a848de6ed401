"""`/connector-plugins` beyond the connectors: the converters, transforms and predicates
with their Connect types, versions and settings, and the KIP-891 version checks on a
plugin's schema and on a config."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from rest.connector_plugins_routes import connector_plugins_router
from tests.support.plugins import plugins_for
from worker.admission.registry import PluginRegistry, qualified_name
from worker.connectors.generator import GeneratorConnector
from worker.records.converters.spec import CLASS_NAMES, SETTINGS
from worker.records.transforms import catalog

SPARKHERD = version("sparkherd")
GENERATOR = qualified_name(GeneratorConnector)
JSON = "org.apache.kafka.connect.json.JsonConverter"
MASK = "org.apache.kafka.connect.transforms.MaskField$Value"


@pytest.fixture
def client() -> TestClient:
    app = FastAPI()
    app.include_router(
        connector_plugins_router(plugins_for(PluginRegistry([GeneratorConnector]), Path("/c")))
    )
    return TestClient(app)


def test_all_plugins_are_the_connectors_then_transforms_predicates_and_converters(
    client: TestClient,
) -> None:
    listed = client.get("/connector-plugins?connectorsOnly=false").json()

    assert [p["type"] for p in listed] == sorted(
        (p["type"] for p in listed),
        key=["source", "transformation", "predicate", "converter"].index,
    )
    assert listed[0] == {
        "class": GENERATOR,
        "type": "source",
        "version": SPARKHERD,
        "alias": "generator",
    }
    by_class = {p["class"]: p for p in listed}
    assert {c for c, p in by_class.items() if p["type"] in ("transformation", "predicate")} == set(
        catalog.PLUGINS
    )
    assert by_class[MASK] == {
        "class": MASK,
        "type": "transformation",
        "version": catalog.PLUGINS[MASK].version,
    }
    converters = {c: p for c, p in by_class.items() if p["type"] == "converter"}
    assert converters == {
        class_name: {"class": class_name, "type": "converter", "version": SPARKHERD, "alias": kind}
        for kind, class_name in CLASS_NAMES.items()
    }


@pytest.mark.parametrize("name", [JSON, "JsonConverter", "json"])
def test_a_converter_lists_its_settings(client: TestClient, name: str) -> None:
    response = client.get(f"/connector-plugins/{name}/config")

    assert response.status_code == 200
    definitions = {d["name"]: d for d in response.json()}
    assert set(definitions) == set(SETTINGS["json"])
    enable = definitions["schemas.enable"]
    assert (enable["type"], enable["required"], enable["default_value"]) == (
        "BOOLEAN",
        False,
        "true",
    )


@pytest.mark.parametrize("name", [MASK, "MaskField$Value"])
def test_a_transform_lists_its_settings_as_the_catalog_has_them(
    client: TestClient, name: str
) -> None:
    response = client.get(f"/connector-plugins/{name}/config")

    assert response.status_code == 200
    expected = [
        (s.name, s.type, s.required, s.default, s.importance)
        for s in catalog.PLUGINS[MASK].settings
    ]
    assert [
        (d["name"], d["type"], d["required"], d["default_value"], d["importance"])
        for d in response.json()
    ] == expected


@pytest.mark.parametrize("requirement", ["latest", SPARKHERD, f"[{SPARKHERD},)"])
def test_a_schema_asked_for_a_version_range_the_plugin_is_in_is_answered(
    client: TestClient, requirement: str
) -> None:
    response = client.get("/connector-plugins/generator/config", params={"version": requirement})

    assert response.status_code == 200
    definitions = {d["name"]: d for d in response.json()}
    assert definitions["connector.plugin.version"]["default_value"] == SPARKHERD


@pytest.mark.parametrize(
    ("plugin", "requirement", "status", "message"),
    [
        ("generator", "[0,0.0.1]", 400, "which does not match the required version range"),
        ("generator", "[1.0", 400, "invalid version requirement '[1.0': Unbounded range"),
        (JSON, SPARKHERD, 200, None),
        (JSON, "9.9.9", 400, "which does not match the required version range [9.9.9,9.9.9]"),
    ],
)
def test_a_schema_asked_for_a_version_range_needs_the_plugin_in_it(
    client: TestClient, plugin: str, requirement: str, status: int, message: str | None
) -> None:
    response = client.get(f"/connector-plugins/{plugin}/config", params={"version": requirement})

    assert response.status_code == status
    if message is not None:
        assert message in response.json()["message"]


def test_connector_plugin_version_defaults_to_the_plugin_version(client: TestClient) -> None:
    definitions = {d["name"]: d for d in client.get("/connector-plugins/generator/config").json()}

    assert definitions["connector.plugin.version"]["default_value"] == SPARKHERD


def _validated(client: TestClient, config: dict[str, str]) -> dict[str, list[str]]:
    """Each defined key's errors in the validate answer for a generator `config`."""
    body: dict[str, Any] = client.put(
        "/connector-plugins/generator/config/validate",
        json={"output.path": "/data/out", **config},
    ).json()
    return {c["definition"]["name"]: c["value"]["errors"] for c in body["configs"]}


def _errors(client: TestClient, config: dict[str, str]) -> dict[str, list[str]]:
    return {key: errors for key, errors in _validated(client, config).items() if errors}


@pytest.mark.parametrize(
    "config",
    [
        {"connector.plugin.version": SPARKHERD},
        {"connector.plugin.version": "latest"},
        {"connector.plugin.version": "[0.0.1,)"},
        {"value.converter.plugin.version": SPARKHERD, "key.converter.plugin.version": "latest"},
    ],
)
def test_a_version_the_worker_has_validates_clean_on_its_key(
    client: TestClient, config: dict[str, str]
) -> None:
    validated = _validated(client, config)

    assert {key: validated[key] for key in config} == {key: [] for key in config}
    assert not any(validated.values())


@pytest.mark.parametrize(
    ("key", "requirement", "message"),
    [
        ("connector.plugin.version", "9.9.9", f"{GENERATOR} has version {SPARKHERD}"),
        ("connector.plugin.version", "[1.0", "invalid version requirement '[1.0': Unbounded"),
        ("value.converter.plugin.version", "4.1.1", f"has version {SPARKHERD} which does not"),
        ("header.converter.plugin.version", "(,0.0.1]", "The header converter has version"),
    ],
)
def test_a_version_the_worker_has_not_is_an_error_on_its_key(
    client: TestClient, key: str, requirement: str, message: str
) -> None:
    errors = _errors(client, {key: requirement})

    assert list(errors) == [key]
    assert message in errors[key][0]


def test_validating_a_chain_lists_the_keys_each_alias_defines(client: TestClient) -> None:
    body = client.put(
        "/connector-plugins/generator/config/validate",
        json={"output.path": "/o", "transforms": "mask", "transforms.mask.type": MASK},
    ).json()

    names = [c["definition"]["name"] for c in body["configs"]]
    mask_keys = [f"transforms.mask.{s.name}" for s in catalog.PLUGINS[MASK].settings]
    assert set(mask_keys) <= set(names)
    assert {"transforms.mask.type", "transforms.mask.predicate", "transforms.mask.negate"} <= set(
        names
    )
