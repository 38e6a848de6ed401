"""`/ui`: one page that shows the cluster as this worker sees it, on every worker.

Plain HTML, CSS and JavaScript shipped in the package (`rest/ui/`), no build step. The
page reads the public REST API from the browser (`/workers`, `/health`, `/connectors`,
`/workers/progress`) and its buttons call it, so it can do nothing a `curl` could not. It sits
behind the same `rest.auth` as the API; the browser's own credentials come along with
every call it makes. A strict Content-Security-Policy allows only these files' scripts
and styles, so a connector name can never run as script even if it were rendered as HTML
(the script only ever sets text).
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from fastapi import APIRouter, HTTPException, Response

ASSETS: Final = {
    "index.html": "text/html; charset=utf-8",
    "ui.css": "text/css; charset=utf-8",
    "ui.js": "text/javascript; charset=utf-8",
}
"""Every file the page is made of; nothing else under `/ui/` is served."""

HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _read(name: str) -> bytes:
    return files("rest").joinpath("ui", name).read_bytes()


def ui_router() -> APIRouter:
    """`GET /ui` (the page) and `GET /ui/<asset>`; left out of the OpenAPI document,
    which describes the API, not this page."""
    router = APIRouter(include_in_schema=False)
    content = {name: _read(name) for name in ASSETS}

    def serve(name: str) -> Response:
        return Response(content[name], media_type=ASSETS[name], headers=HEADERS)

    @router.get("/ui")
    async def page() -> Response:
        return serve("index.html")

    @router.get("/ui/{name}")
    async def asset(name: str) -> Response:
        if name not in content:
            raise HTTPException(404, f"no such file: /ui/{name}")
        return serve(name)

    return router
