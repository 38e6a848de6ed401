"""Kafka Connect's error body: `{"error_code": <HTTP status>, "message": "..."}`."""

from __future__ import annotations

from fastapi.responses import JSONResponse


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error_code": status, "message": message})
