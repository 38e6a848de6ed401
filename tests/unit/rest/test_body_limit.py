"""Bodies above the limit are refused before a handler sees them, however they arrive."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from rest.body_limit import BodyLimit

LIMIT = 1000


def client() -> tuple[TestClient, list[int]]:
    seen: list[int] = []
    app = FastAPI()

    @app.post("/echo")
    async def echo(request: Request) -> dict[str, int]:
        seen.append(len(await request.body()))
        return {"bytes": seen[-1]}

    app.add_middleware(BodyLimit, max_bytes=LIMIT)
    return TestClient(app), seen


def chunks(count: int, size: int) -> Iterator[bytes]:
    for _ in range(count):
        yield b"x" * size


def test_a_body_at_the_limit_reaches_the_handler_whole() -> None:
    api, seen = client()
    answer = api.post("/echo", content=b"x" * LIMIT)
    assert (answer.status_code, answer.json(), seen) == (200, {"bytes": LIMIT}, [LIMIT])


def test_a_declared_length_above_the_limit_is_refused() -> None:
    api, seen = client()
    answer = api.post("/echo", content=b"x" * (LIMIT + 1))
    assert answer.status_code == 413
    assert answer.json() == {
        "error_code": 413,
        "message": f"Request body too large: the limit is {LIMIT} bytes",
    }
    assert seen == []


def test_a_streamed_body_is_refused_once_it_passes_the_limit() -> None:
    api, seen = client()
    answer = api.post("/echo", content=chunks(11, 100))
    assert answer.status_code == 413
    assert seen == []


def test_a_streamed_body_under_the_limit_is_replayed_to_the_handler() -> None:
    api, seen = client()
    answer = api.post("/echo", content=chunks(5, 100))
    assert (answer.status_code, seen) == (200, [500])
