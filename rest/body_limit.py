"""Refuse request bodies larger than a config record can be, or nested deeper than the
worker walks.

A connector config travels as one record on the config topic, and Kafka brokers refuse
records above about 1 MB by default; a larger body could never be stored, and reading it
whole would only cost the worker memory. So it is refused (413) before any handler runs,
whether it declares its length or streams it in chunks.

A body within that size can still nest a million levels (`[[[[...`): the JSON parser gives
up on it with an error that names nothing, and one it does parse (an offset nested 900
levels) reaches checks that walk it recursively. So a body nested deeper than
`MAX_NESTING` is a 400 before it is parsed.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rest.errors import error_response
from rest.worker_seam import json_nesting_problem

MAX_BODY_BYTES = 1_000_000


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self._app = app
        self._max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self._max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self._max_bytes:
                await self._refuse(scope, receive, send)
                return
            more = message.get("more_body", False)
        body = b"".join(chunks)
        too_deep = json_nesting_problem(body)
        if too_deep is not None:
            await error_response(400, f"Request body {too_deep}")(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self._app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = error_response(
            413, f"Request body too large: the limit is {self._max_bytes} bytes"
        )
        await refusal(scope, receive, send)
