"""Optional HTTP authentication for the REST API (`rest.auth` = basic or bearer).

Kafka Connect leaves this to a JAAS-based REST extension; here it is two settings. A
follower forwards a write with the caller's own `Authorization` header, so the leader
checks the same credentials and a request never gains rights by being forwarded.
`/health` stays open: Kubernetes probes carry no credentials, and it reveals nothing.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from fastapi import FastAPI, Request, Response

from rest.errors import error_response

OPEN_PATHS = frozenset({"/health"})

Scheme = Literal["basic", "bearer"]


def require_authentication(app: FastAPI, scheme: Scheme, credentials: Sequence[str]) -> None:
    """Answer 401 to any request (but `OPEN_PATHS`) without valid credentials."""
    accepted = [entry.encode() for entry in credentials]
    challenge = 'Basic realm="sparkherd"' if scheme == "basic" else 'Bearer realm="sparkherd"'

    @app.middleware("http")
    async def _authenticate(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if request.url.path in OPEN_PATHS:
            return await call_next(request)
        presented = _presented(request.headers.get("authorization", ""), scheme)
        if presented is None or not _matches(presented, accepted):
            answer = error_response(
                401, f"{scheme} authentication required: missing or invalid credentials"
            )
            answer.headers["WWW-Authenticate"] = challenge
            return answer
        return await call_next(request)


def _presented(header: str, scheme: Scheme) -> bytes | None:
    """The `user:password` or token the header carries under `scheme`, else None."""
    kind, _, value = header.strip().partition(" ")
    if kind.lower() != scheme or not value.strip():
        return None
    if scheme == "bearer":
        return value.strip().encode()
    try:
        return base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None


def _matches(presented: bytes, accepted: Sequence[bytes]) -> bool:
    """Compare with every entry in constant time, so timing reveals nothing."""
    found = False
    for entry in accepted:
        found |= hmac.compare_digest(presented, entry)
    return found
