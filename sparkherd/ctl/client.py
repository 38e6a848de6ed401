"""HTTP to one worker's REST API: where it is, how to log in, and what its answers mean.

Every failure becomes a `CtlError` carrying one line for the user: a refusal carries the
server's own message (Connect's error body `{"error_code", "message"}`), an unreachable
or untrusted worker says so without a traceback. Answers are untrusted input: a body that
is not the expected JSON is reported, never a crash.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import quote, urlsplit

import httpx

DEFAULT_URL: Final = "http://127.0.0.1:8083"
URL_VARIABLE: Final = "SPARKHERD_URL"
USER_VARIABLE: Final = "SPARKHERD_USER"
PASSWORD_VARIABLE: Final = "SPARKHERD_PASSWORD"
TOKEN_VARIABLE: Final = "SPARKHERD_TOKEN"
CACERT_VARIABLE: Final = "SPARKHERD_CACERT"

CONNECT_TIMEOUT_S: Final = 10.0
READ_TIMEOUT_S: Final = 120.0
"""A request sent while the worker is still joining its group waits for the join (up to
90 s on the server), so reads get longer than that."""
MAX_MESSAGE_CHARS: Final = 2_000
"""How much of a body that is not Connect's error body an error line shows."""

EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2

AuthScheme = Literal["none", "basic", "bearer"]


class CtlError(Exception):
    """A failure to report in one line, with the process's exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CtlError):
    """Something the user gave (an option, a variable, a file) is wrong; nothing was sent."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


class ApiError(CtlError):
    """The worker answered with an HTTP error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Target:
    """Which worker to call and how: its base URL, credentials and trusted CAs."""

    url: str = DEFAULT_URL
    scheme: AuthScheme = "none"
    user: str = ""
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)
    cacert: Path | None = None

    def auth(self) -> httpx.Auth | None:
        return httpx.BasicAuth(self.user, self.password) if self.scheme == "basic" else None

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.scheme == "bearer":
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def verify(self) -> ssl.SSLContext | bool:
        """The CAs an https worker's certificate must chain to (the system's by default)."""
        if self.cacert is None:
            return True
        try:
            return ssl.create_default_context(cafile=str(self.cacert))
        except FileNotFoundError:
            raise UsageError(f"CA file '{self.cacert}' does not exist") from None
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(f"cannot use CA file '{self.cacert}': {_reason(exc)}") from None


def target_from(url: str | None, cacert: str | None, env: Mapping[str, str]) -> Target:
    """The target from the options (`url`, `cacert`; None if not given), then `SPARKHERD_*`
    variables, then the defaults. Credentials come from the environment only, so they do
    not show in process listings or shell history."""
    base = (url or env.get(URL_VARIABLE) or DEFAULT_URL).strip().rstrip("/")
    try:
        parts = urlsplit(base)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a malformed IPv6 address, a port out of range or not a number
        valid = False
    if not valid:
        raise UsageError(f"invalid worker URL '{base}': expected http://HOST:PORT or https://...")
    if parts.query or parts.fragment:
        raise UsageError(f"invalid worker URL '{base}': no query or fragment, please")
    ca = cacert or env.get(CACERT_VARIABLE) or None
    cacert_path = Path(ca) if ca else None
    user, password = env.get(USER_VARIABLE), env.get(PASSWORD_VARIABLE)
    token = env.get(TOKEN_VARIABLE)
    if token and (user or password):
        raise UsageError(
            f"set either {TOKEN_VARIABLE} (bearer) or {USER_VARIABLE} and "
            f"{PASSWORD_VARIABLE} (basic), not both"
        )
    if token:
        return Target(base, "bearer", token=token, cacert=cacert_path)
    if user or password:
        if not user or password is None:
            raise UsageError(
                f"basic authentication needs both {USER_VARIABLE} and {PASSWORD_VARIABLE}"
            )
        return Target(base, "basic", user=user, password=password, cacert=cacert_path)
    return Target(base, cacert=cacert_path)


def segment(value: str, what: str = "connector name") -> str:
    """One path segment, percent-encoded; `.` and `..` would name another path."""
    if value in ("", ".", ".."):
        raise UsageError(f"invalid {what} '{value}'")
    return quote(value, safe="")


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    """The parsed JSON body; None when the answer had none."""


class RestClient:
    """Calls on one worker; use as a context manager."""

    def __init__(self, target: Target, transport: httpx.BaseTransport | None = None) -> None:
        self.target = target
        try:
            self._http = httpx.Client(
                base_url=target.url,
                auth=target.auth(),
                headers=target.headers(),
                verify=target.verify(),
                timeout=httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
                transport=transport,
            )
        except httpx.InvalidURL as exc:
            raise UsageError(f"invalid worker URL '{target.url}': {exc}") from None

    def __enter__(self) -> RestClient:
        return self

    def __exit__(self, *_: object) -> None:
        self._http.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | list[str]] | None = None,
        body: Any = None,
    ) -> Answer:
        """One request; an error status or a failure to get an answer raises `CtlError`."""
        content = None if body is None else json.dumps(body).encode()
        headers = {} if content is None else {"Content-Type": "application/json"}
        try:
            response = self._http.request(
                method, path, params=params, content=content, headers=headers
            )
        except httpx.TimeoutException:
            raise CtlError(
                f"no answer from the worker at {self.target.url} within {READ_TIMEOUT_S:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise CtlError(transport_failure(self.target, exc)) from None
        if response.status_code >= 400:
            raise ApiError(response.status_code, error_message(response, self.target))
        return Answer(response.status_code, _json_body(response))


def transport_failure(target: Target, exc: Exception) -> str:
    """One line for a request that got no HTTP answer."""
    reason = _reason(exc)
    if "CERTIFICATE_VERIFY_FAILED" in reason or "certificate verify failed" in reason:
        return (
            f"the TLS certificate of the worker at {target.url} is not trusted ({reason}); "
            "give its CA with --cacert or SPARKHERD_CACERT"
        )
    if isinstance(exc, httpx.ConnectError):
        return f"cannot reach a worker at {target.url}: {reason}"
    return f"no valid answer from the worker at {target.url}: {reason}"


def error_message(response: httpx.Response, target: Target) -> str:
    """The server's message for an error status, with the status and, for a 401, which
    variables give credentials."""
    message = _connect_message(response.text) or _first_line(response.text)
    message = message or response.reason_phrase or "no message"
    line = f"{message} (HTTP {response.status_code})"
    if response.status_code == 401:
        line += f"; {_credentials_hint(response, target)}"
    return line


def _connect_message(text: str) -> str | None:
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        message: str = body["message"].strip()
        return message[:MAX_MESSAGE_CHARS] or None
    return None


def _credentials_hint(response: httpx.Response, target: Target) -> str:
    basic = f"{USER_VARIABLE} and {PASSWORD_VARIABLE}"
    given = {"basic": basic, "bearer": TOKEN_VARIABLE}
    if target.scheme != "none":
        return f"check {given[target.scheme]}"
    wanted = response.headers.get("www-authenticate", "").split(" ", 1)[0].lower()
    if wanted in given:
        return f"set {given[wanted]}"
    return f"set {basic} (basic) or {TOKEN_VARIABLE} (bearer)"


def _json_body(response: httpx.Response) -> Any:
    if not response.content.strip():
        return None
    try:
        return response.json()
    except ValueError:
        raise CtlError(
            f"the worker answered {response.status_code} with a body that is not JSON: "
            f"{_first_line(response.text)!r}"
        ) from None


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:MAX_MESSAGE_CHARS].strip() if lines else ""


def _reason(exc: BaseException) -> str:
    """The most specific one-line cause httpx and ssl give, e.g. 'Connection refused'."""
    while str(exc) == "" and exc.__cause__ is not None:
        exc = exc.__cause__
    text = _first_line(str(exc))
    return text or type(exc).__name__
