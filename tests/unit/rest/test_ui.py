"""`/ui`: the page's three files, served from the package, behind `rest.auth`."""

from __future__ import annotations

import base64
import fnmatch
import re
import tomllib
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from rest.auth import OPEN_PATHS, require_authentication
from rest.ui import ASSETS, ui_router
from worker.runtime.trigger_lag import OVERLOADED_MARK

ROOT = Path(__file__).resolve().parents[3]
UI_DIR = ROOT / "rest" / "ui"


def test_the_page_and_its_assets_are_served_with_a_strict_policy(client: TestClient) -> None:
    page = client.get("/ui")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert 'src="ui/ui.js"' in page.text and 'href="ui/ui.css"' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy
    for name, media_type in ASSETS.items():
        answer = client.get(f"/ui/{name}")
        assert answer.status_code == 200
        assert answer.headers["content-type"] == media_type
        assert answer.content == (UI_DIR / name).read_bytes()
        assert answer.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("path", ["/ui/missing.js", "/ui/..%2Fapp.py", "/ui/%2E%2E"])
def test_nothing_else_under_ui_is_served(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 404
    assert answer.json()["error_code"] == 404


def test_the_page_is_not_part_of_the_api_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if path.startswith("/ui")]


def test_the_page_needs_the_same_credentials_as_the_api() -> None:
    assert "/ui" not in OPEN_PATHS
    app = FastAPI()
    app.include_router(ui_router())
    require_authentication(app, "basic", ["admin:s3cret"])
    client = TestClient(app)
    for path in ("/ui", "/ui/ui.js"):
        refused = client.get(path)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Basic")
    token = base64.b64encode(b"admin:s3cret").decode()
    assert client.get("/ui", headers={"Authorization": f"Basic {token}"}).status_code == 200


def test_the_script_never_parses_server_text_as_markup() -> None:
    """Connector names are user input: the script sets text, never HTML."""
    script = (UI_DIR / "ui.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    assert re.search(r'credentials:\s*"same-origin"', script)
    page = (UI_DIR / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "style=" not in page, "the policy forbids inline code"


def test_every_file_of_the_page_ships_in_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["rest"]
    shipped = sorted(p.name for p in UI_DIR.iterdir())
    assert sorted(ASSETS) == shipped
    for name in shipped:
        assert any(fnmatch.fnmatch(f"ui/{name}", pattern) for pattern in patterns), name


def test_the_page_finds_the_overload_line_by_the_mark_health_writes() -> None:
    script = (UI_DIR / "ui.js").read_text(encoding="utf-8")
    assert f'const OVERLOADED_MARK = "{OVERLOADED_MARK}";' in script
