"""`sparkherd ctl`'s command line: verbs, kinds, options on either side, the target."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from sparkherd.cli import _parser
from sparkherd.ctl import commands
from sparkherd.ctl.client import DEFAULT_URL, Target, UsageError, segment, target_from


def parse(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(["ctl", *argv])


def test_options_before_and_after_the_verb_and_their_defaults() -> None:
    plain = parse("get", "connectors")
    assert (plain.url, plain.cacert, plain.output) == (None, None, "table")
    assert plain.verb_function is commands._get_connectors
    assert commands.is_ctl(plain)

    before = parse("--url", "http://w:1", "-o", "json", "get", "workers")
    after = parse("get", "workers", "--url", "http://w:1", "-o", "json")
    for args in (before, after):
        assert (args.url, args.output) == ("http://w:1", "json")
        assert args.verb_function is commands._get_workers
    assert parse("--cacert", "ca.pem", "describe", "connector", "x").cacert == "ca.pem"


@pytest.mark.parametrize(
    ("argv", "function"),
    [
        (["get", "connector"], "_get_connectors"),
        (["get", "worker"], "_get_workers"),
        (["get", "plugins"], "_get_plugins"),
        (["get", "loggers"], "_get_loggers"),
        (["get", "offsets", "demo"], "_get_offsets"),
        (["describe", "connector", "demo"], "_describe_connector"),
        (["apply", "-f", "demo.json"], "_apply"),
        (["patch", "offsets", "demo", "-f", "-"], "_patch_offsets"),
        (["reset", "offsets", "demo"], "_reset_offsets"),
        (["set", "logger", "herder", "debug"], "_set_logger"),
        (["restart", "connector", "demo"], "_restart"),
    ],
)
def test_each_verb_runs_its_function(argv: list[str], function: str) -> None:
    assert parse(*argv).verb_function is getattr(commands, function)


def test_write_verbs_and_their_flags() -> None:
    for verb in ("delete", "pause", "resume", "stop"):
        args = parse(verb, "connector", "demo")
        assert args.name == "demo" and callable(args.verb_function)
    plain = parse("restart", "connector", "demo")
    assert (plain.include_tasks, plain.only_failed) == (False, False)
    both = parse("restart", "connector", "demo", "--include-tasks", "--only-failed")
    assert (both.include_tasks, both.only_failed) == (True, True)
    assert parse("set", "logger", "herder", "INFO", "--cluster").cluster
    assert not parse("set", "logger", "herder", "INFO").cluster
    assert parse("apply", "-f", "-").file == "-"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["get"],
        ["get", "tables"],
        ["describe", "connector"],
        ["apply"],
        ["patch", "offsets", "demo"],
        ["set", "logger", "herder"],
        ["get", "connectors", "-o", "yaml"],
        ["delete", "worker", "x"],
    ],
)
def test_usage_mistakes_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(*argv)
    assert exited.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_target_defaults_and_precedence() -> None:
    assert target_from(None, None, {}) == Target(DEFAULT_URL)
    env = {"SPARKHERD_URL": "https://env:8443/", "SPARKHERD_CACERT": "/env/ca.pem"}
    from_env = target_from(None, None, env)
    assert (from_env.url, from_env.cacert) == ("https://env:8443", Path("/env/ca.pem"))
    flags = target_from("http://flag:8083", "/flag/ca.pem", env)
    assert (flags.url, flags.cacert) == ("http://flag:8083", Path("/flag/ca.pem"))


def test_credentials_come_from_the_environment() -> None:
    basic = target_from(None, None, {"SPARKHERD_USER": "admin", "SPARKHERD_PASSWORD": "pw"})
    assert (basic.scheme, basic.user, basic.password) == ("basic", "admin", "pw")
    assert basic.auth() is not None and "Authorization" not in basic.headers()
    empty_password = target_from(None, None, {"SPARKHERD_USER": "a", "SPARKHERD_PASSWORD": ""})
    assert empty_password.scheme == "basic"
    bearer = target_from(None, None, {"SPARKHERD_TOKEN": "t0ken"})
    assert bearer.scheme == "bearer" and bearer.auth() is None
    assert bearer.headers()["Authorization"] == "Bearer t0ken"
    assert "t0ken" not in repr(bearer) and "pw" not in repr(basic)


@pytest.mark.parametrize(
    ("url", "env", "fragment"),
    [
        ("ftp://worker", {}, "invalid worker URL"),
        ("worker:8083", {}, "invalid worker URL"),
        ("http://worker:port", {}, "invalid worker URL"),
        ("http://worker:99999", {}, "invalid worker URL"),
        ("http://[::1", {}, "invalid worker URL"),
        ("http://worker:8083/?x=1", {}, "no query"),
        (None, {"SPARKHERD_USER": "admin"}, "needs both"),
        (None, {"SPARKHERD_PASSWORD": "pw"}, "needs both"),
        (None, {"SPARKHERD_TOKEN": "t", "SPARKHERD_USER": "u"}, "not both"),
    ],
)
def test_target_mistakes_are_usage_errors(
    url: str | None, env: dict[str, str], fragment: str
) -> None:
    with pytest.raises(UsageError) as raised:
        target_from(url, None, env)
    assert fragment in str(raised.value) and raised.value.exit_code == 2


def test_a_missing_or_bad_ca_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        Target(cacert=tmp_path / "missing.pem").verify()
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    with pytest.raises(UsageError, match="cannot use CA file"):
        Target(cacert=garbage).verify()


def test_names_become_one_encoded_path_segment() -> None:
    assert segment("a b/c?d") == "a%20b%2Fc%3Fd"
    for bad in ("", ".", ".."):
        with pytest.raises(UsageError):
            segment(bad)
