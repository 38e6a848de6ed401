"""`rest.auth`: who gets through the REST API, checked on a minimal app."""

from __future__ import annotations

import base64

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from rest.auth import Scheme, require_authentication


def client(scheme: Scheme, credentials: list[str]) -> TestClient:
    app = FastAPI()

    @app.get("/connectors")
    async def connectors() -> list[str]:
        return ["alpha"]

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    require_authentication(app, scheme, credentials)
    return TestClient(app)


def basic(user_password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(user_password.encode()).decode()}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        basic("alice:wrong"),
        basic("mallory:s3cret"),
        {"Authorization": "Basic not-base64!"},
        {"Authorization": "Bearer alice:s3cret"},
        {"Authorization": "Basic"},
    ],
)
def test_basic_refuses_missing_or_wrong_credentials(headers: dict[str, str]) -> None:
    answer = client("basic", ["alice:s3cret", "bob:pw"]).get("/connectors", headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Basic realm="sparkherd"'
    assert answer.json()["error_code"] == 401


@pytest.mark.parametrize("user_password", ["alice:s3cret", "bob:pw"])
def test_basic_lets_every_configured_user_in(user_password: str) -> None:
    answer = client("basic", ["alice:s3cret", "bob:pw"]).get(
        "/connectors", headers=basic(user_password)
    )
    assert (answer.status_code, answer.json()) == (200, ["alpha"])


def test_bearer_checks_the_token_and_the_scheme_name_case_insensitively() -> None:
    api = client("bearer", ["t0ken"])
    assert api.get("/connectors", headers={"Authorization": "bearer t0ken"}).status_code == 200
    assert api.get("/connectors", headers={"Authorization": "Bearer t0ke"}).status_code == 401
    assert api.get("/connectors", headers=basic("t0ken")).status_code == 401


def test_health_stays_open_for_probes() -> None:
    assert client("bearer", ["t0ken"]).get("/health").status_code == 200
