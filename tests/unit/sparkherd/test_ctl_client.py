"""`sparkherd ctl` end to end against canned HTTP answers: requests sent, errors shown.

The live worker is in tests/integration/test_ctl.py; here the answers are ones a worker
should never give (garbage, HTML, a dropped connection), to show that none of them
crashes the client or prints more than one line.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import pytest

from sparkherd.cli import _parser
from sparkherd.ctl.client import Target, error_message, transport_failure
from sparkherd.ctl.commands import run_ctl

Handler = Callable[[httpx.Request], httpx.Response]


@dataclass
class Run:
    code: int
    out: str
    err: str
    requests: list[httpx.Request] = field(default_factory=list)


def ctl(handler: Handler, *argv: str, env: dict[str, str] | None = None, stdin: str = "") -> Run:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        request.read()
        seen.append(request)
        return handler(request)

    out, err = io.StringIO(), io.StringIO()
    args = _parser().parse_args(["ctl", *argv])
    code = run_ctl(
        args, env or {}, out, err, io.StringIO(stdin), transport=httpx.MockTransport(record)
    )
    return Run(code, out.getvalue(), err.getvalue(), seen)


def answer(status: int, body: object = None) -> Handler:
    return lambda _: (
        httpx.Response(status, json=body) if body is not None else httpx.Response(status)
    )


def test_requests_carry_paths_params_bodies_and_credentials() -> None:
    env = {"SPARKHERD_USER": "admin", "SPARKHERD_PASSWORD": "pw", "SPARKHERD_URL": "http://w:1"}
    run = ctl(answer(202, {}), "restart", "connector", "a/b", "--include-tasks", env=env)
    [request] = run.requests
    assert (request.method, request.url.raw_path) == (
        "POST",
        b"/connectors/a%2Fb/restart?includeTasks=true",
    )
    assert request.headers["authorization"].startswith("Basic ")
    assert str(request.url).startswith("http://w:1/")

    run = ctl(answer(204), "set", "logger", "herder", "debug", "--cluster")
    [request] = run.requests
    assert (request.method, request.url.params["scope"]) == ("PUT", "cluster")
    assert json.loads(request.content) == {"level": "debug"}
    assert run.out == "logger herder set to DEBUG on every worker\n"

    bearer = ctl(answer(200, []), "get", "plugins", env={"SPARKHERD_TOKEN": "t0ken"})
    assert bearer.requests[0].headers["authorization"] == "Bearer t0ken"


def test_apply_puts_the_config_or_posts_an_initial_state() -> None:
    run = ctl(answer(201, {"name": "demo"}), "apply", "-f", "-", stdin="name=demo\na=1\n")
    [put] = run.requests
    assert (put.method, put.url.path) == ("PUT", "/connectors/demo/config")
    assert json.loads(put.content) == {"name": "demo", "a": "1"}
    assert run.out == "connector demo created\n"

    def absent_then_created(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(404, json={"error_code": 404, "message": "not found"})
        return httpx.Response(201, json={"name": "demo"})

    body = {"name": "demo", "config": {"a": "1"}, "initial_state": "STOPPED"}
    run = ctl(absent_then_created, "apply", "-f", "-", "-o", "json", stdin=json.dumps(body))
    assert [(r.method, r.url.path) for r in run.requests] == [
        ("GET", "/connectors/demo"),
        ("POST", "/connectors"),
    ]
    assert json.loads(run.requests[1].content) == body
    assert json.loads(run.out) == {"name": "demo"}


def test_an_http_error_prints_the_servers_message_and_exits_1() -> None:
    missing = {"error_code": 404, "message": "Connector ghost not found"}
    run = ctl(answer(404, missing), "describe", "connector", "ghost")
    assert run.code == 1 and run.out == ""
    assert run.err == "sparkherd ctl: Connector ghost not found (HTTP 404)\n"


@pytest.mark.parametrize(
    ("response", "shown"),
    [
        (httpx.Response(500, text="<html>\n<b>Bad gateway</b>\n</html>"), "<html> (HTTP 500)"),
        (httpx.Response(502, json=["not", "connect"]), '["not","connect"] (HTTP 502)'),
        (httpx.Response(400, json={"message": "line one\n\x1b[2Jline two"}), "line one"),
        (httpx.Response(503), "Service Unavailable (HTTP 503)"),
        (httpx.Response(200, text="not json"), "not JSON"),
    ],
)
def test_strange_answers_are_one_clean_line(response: httpx.Response, shown: str) -> None:
    run = ctl(lambda _: response, "get", "connectors")
    assert run.code == 1
    assert run.err.count("\n") == 1 and "\x1b" not in run.err
    assert shown in run.err


def test_well_formed_but_unexpected_json_renders() -> None:
    for body in ([1, 2], {"x": 3}, "text", 7, {"demo": {"status": "weird", "info": [1]}}):
        for kind in ("connectors", "workers", "plugins", "loggers"):
            run = ctl(answer(200, body), "get", kind)
            assert run.code == 0, (kind, body, run.err)


def test_a_401_says_which_variables_to_set() -> None:
    refused = httpx.Response(
        401,
        json={"error_code": 401, "message": "basic authentication required"},
        headers={"WWW-Authenticate": 'Basic realm="sparkherd"'},
    )
    run = ctl(lambda _: refused, "get", "connectors")
    assert run.code == 1
    assert "basic authentication required (HTTP 401); set SPARKHERD_USER and" in run.err
    request = httpx.Request("GET", "http://w:1/")
    wrong = Target(scheme="bearer", token="t")
    refused.request = request
    assert error_message(refused, wrong).endswith("check SPARKHERD_TOKEN")


def test_no_answer_is_one_line() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    run = ctl(refuse, "get", "workers", "--url", "http://127.0.0.1:9")
    assert run.code == 1
    assert run.err == (
        "sparkherd ctl: cannot reach a worker at http://127.0.0.1:9: "
        "[Errno 111] Connection refused\n"
    )
    untrusted = httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    assert "not trusted" in transport_failure(Target("https://w:1"), untrusted)
    assert "--cacert" in transport_failure(Target("https://w:1"), untrusted)


def test_usage_errors_exit_2_before_any_request() -> None:
    run = ctl(answer(200, {}), "apply", "-f", "/does/not/exist.json")
    assert (run.code, run.requests) == (2, [])
    assert run.err.startswith("sparkherd ctl: cannot read")
    run = ctl(answer(200, {}), "get", "connectors", env={"SPARKHERD_USER": "u"})
    assert (run.code, run.requests) == (2, [])
