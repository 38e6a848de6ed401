"""Bodies nested deeper than the worker walks are refused before anything parses them:
a 400 naming the bound, never a parse error that names nothing or a walk that runs out
of stack."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from rest.body_limit import BodyLimit
from worker.records.nesting import MAX_NESTING

_JSON = {"content-type": "application/json"}


def client() -> tuple[TestClient, list[Any]]:
    seen: list[Any] = []
    app = FastAPI()

    @app.post("/echo")
    async def echo(body: dict[str, Any]) -> dict[str, int]:
        seen.append(body)
        return {"keys": len(body)}

    app.add_middleware(BodyLimit)
    return TestClient(app), seen


def nested(levels: int) -> str:
    """An object whose JSON nests `levels` deep."""
    return '{"a": [' * (levels // 2) + "{}" * (levels % 2) + "]}" * (levels // 2)


def refusal(answer: Any) -> str:
    assert answer.status_code == 400, answer.text
    message: str = answer.json()["message"]
    assert answer.json()["error_code"] == 400
    return message


def test_a_body_at_the_bound_reaches_the_handler() -> None:
    api, seen = client()
    answer = api.post("/echo", content=nested(MAX_NESTING), headers=_JSON)
    assert answer.status_code == 200, answer.text
    assert seen == [json.loads(nested(MAX_NESTING))]


def test_one_level_more_is_a_400_naming_the_bound_before_the_handler() -> None:
    api, seen = client()
    message = refusal(api.post("/echo", content=nested(MAX_NESTING + 1), headers=_JSON))
    assert message.startswith("Request body nested more than 100 levels deep")
    assert seen == []


def test_a_megabyte_of_brackets_is_the_same_400() -> None:
    api, seen = client()
    body = '{"config": {"a": ' + "[" * 999_000 + "}}"
    assert "more than 100 levels" in refusal(api.post("/echo", content=body, headers=_JSON))
    assert seen == []


def test_brackets_in_strings_are_text() -> None:
    api, seen = client()
    body = json.dumps({"sql": "[{(" * 10_000, "quote": '\\"[[' * 1000})
    assert api.post("/echo", content=body, headers=_JSON).status_code == 200
    assert len(seen) == 1


def test_a_body_in_another_encoding_of_json_is_measured_as_the_parser_reads_it() -> None:
    api, seen = client()
    body = nested(MAX_NESTING + 1).encode("utf-16")
    assert "more than 100 levels" in refusal(api.post("/echo", content=body, headers=_JSON))
    assert seen == []
