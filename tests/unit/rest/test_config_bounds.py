"""Every route that takes a connector config refuses one beyond the bounds with Connect's
400 body, before the herder sees it; a config at the bounds goes through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from herder.stores.config_records import TargetState
from tests.unit.rest.fake_herder import FakeHerder
from worker.config.bounds import MAX_CONFIG_KEYS, MAX_CONFIG_TEXT_BYTES

BASE = {"connector.class": "generator", "output.path": "/data/out"}
Body = Callable[[dict[str, Any]], Any]
ROUTES: list[tuple[str, str, Body, int]] = [
    ("POST", "/connectors", lambda config: {"name": "new", "config": config}, 201),
    ("PUT", "/connectors/big/config", lambda config: config, 200),
    ("PATCH", "/connectors/big/config", lambda config: config, 200),
    ("PUT", "/connector-plugins/generator/config/validate", lambda config: config, 404),
]
"""Each route's answer to a config at the bounds: the handler ran (validate's 404 is this
app's, which has no plugins)."""
IDS = [" ".join(route[:2]) for route in ROUTES]


def padded(keys: int) -> dict[str, Any]:
    return {**BASE, **{f"pad.{i}": i for i in range(keys - len(BASE))}}


@pytest.mark.parametrize(("method", "path", "body", "accepted"), ROUTES, ids=IDS)
@pytest.mark.parametrize(
    ("config", "message"),
    [
        (padded(MAX_CONFIG_KEYS + 1), f"at most {MAX_CONFIG_KEYS} keys (got 1001)"),
        ({str(i): 0 for i in range(60_000)}, "(got 60000)"),
        (
            {**BASE, "transform.sql": "x" * (MAX_CONFIG_TEXT_BYTES + 1)},
            f"the value of 'transform.sql' may be at most {MAX_CONFIG_TEXT_BYTES} bytes",
        ),
        (
            {**BASE, "name.é": "é" * (MAX_CONFIG_TEXT_BYTES // 2 + 1)},
            f"(got {MAX_CONFIG_TEXT_BYTES + 2})",
        ),
        ({**BASE, "k" * (MAX_CONFIG_TEXT_BYTES + 1): "v"}, "a config key may be at most"),
    ],
    ids=["keys", "60000-keys", "value", "utf-8-value", "key"],
)
def test_a_config_beyond_the_bounds_is_a_400_the_herder_never_sees(
    client: TestClient,
    herder: FakeHerder,
    method: str,
    path: str,
    body: Body,
    accepted: int,
    config: dict[str, Any],
    message: str,
) -> None:
    herder.add("big", target=TargetState.STOPPED)
    before = dict(herder.configs["big"])
    answer = client.request(method, path, json=body(config))
    assert answer.status_code == 400, answer.text
    assert answer.json()["error_code"] == 400
    assert message in answer.json()["message"]
    assert herder.configs == {"big": before}


@pytest.mark.parametrize(("method", "path", "body", "accepted"), ROUTES, ids=IDS)
def test_a_config_at_the_bounds_goes_through(
    client: TestClient, herder: FakeHerder, method: str, path: str, body: Body, accepted: int
) -> None:
    """Stored with its `name`, the config has as many keys as it may (PATCH merges it into
    the stored `connector.class`, `tasks.max` and `name`)."""
    herder.add("big", target=TargetState.STOPPED)
    config = {
        **padded(MAX_CONFIG_KEYS - 3),
        "tasks.max": "1",
        "transform.sql": "é" * (MAX_CONFIG_TEXT_BYTES // 2),
    }
    answer = client.request(method, path, json=body(config))
    assert answer.status_code == accepted, answer.text
