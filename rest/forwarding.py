"""Server-side forwarding of leader-only writes, as Kafka Connect's followers do.

A follower that receives a write replays the request against the leader's advertised URL
and relays the answer. The forwarded copy is marked, so it is never forwarded again: a
request makes at most two hops even while leadership moves.
"""

from __future__ import annotations

import ssl
from urllib.parse import quote

import httpx
from fastapi import Request, Response

from herder.requests import DEFAULT_REQUEST_TIMEOUT_S
from rest.errors import error_response

FORWARDED_HEADER = "x-sparkherd-forwarded"
FORWARD_TIMEOUT = httpx.Timeout(DEFAULT_REQUEST_TIMEOUT_S + 10.0, connect=10.0)
"""Longer than the leader may hold a request in its queue (it answers 409 itself after
that), so a follower never gives up on a write the leader is still going to make."""


def leader_path(path: str) -> str:
    """The decoded `path` this worker routed on, each segment percent-encoded again.

    A name may hold `?`, `#`, `%` or spaces: sent decoded, the leader would read
    `victim?x` as `victim` plus a query and act on another connector. Encoding what this
    worker decoded makes the leader decode the very same path, so it routes to the same
    handler with the same name. The client's raw path is not replayed instead: ASGI
    servers need not provide it, and it may hold bytes (raw UTF-8, say) that an HTTP
    client would encode once more on the way.
    """
    return "/".join(quote(segment, safe="") for segment in path.split("/"))


async def forward_to_leader(
    request: Request, leader_url: str, verify: ssl.SSLContext | bool = True
) -> Response:
    target = leader_url.rstrip("/") + leader_path(request.scope["path"])
    headers = {
        key: value
        for key, value in request.headers.items()
        if key.lower() in ("content-type", "accept", "authorization")
    }
    headers[FORWARDED_HEADER] = "1"
    try:
        async with httpx.AsyncClient(timeout=FORWARD_TIMEOUT, verify=verify) as client:
            answer = await client.request(
                request.method,
                target,
                params=request.query_params,
                content=await request.body(),
                headers=headers,
            )
    except httpx.HTTPError as exc:
        return error_response(
            409, f"could not forward the request to the leader at {leader_url}: {exc}"
        )
    relayed = {k: v for k, v in answer.headers.items() if k.lower() in ("content-type", "location")}
    return Response(status_code=answer.status_code, content=answer.content, headers=relayed)
