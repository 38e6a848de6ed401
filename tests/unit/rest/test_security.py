"""`RestSecurity`: the REST server's TLS and authentication keys, checked and read once."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from rest.security import CREDENTIALS, CREDENTIALS_FILE, RestSecurity
from worker.config import ConfigError, load_worker_config


def security(*overrides: str, env: dict[str, str] | None = None) -> RestSecurity:
    return RestSecurity.from_config(load_worker_config(None, env or {}, list(overrides)))


def test_rest_auth_is_off_by_default_and_needs_no_credentials() -> None:
    assert security().auth is None


def test_rest_auth_credentials_from_the_environment() -> None:
    env = {"SPARKHERD_REST_AUTH_CREDENTIALS": "alice:s3cret, bob:pw:with:colons"}
    assert security("rest.auth=basic", env=env).auth == (
        "basic",
        ("alice:s3cret", "bob:pw:with:colons"),
    )


def test_credentials_file_is_read_once_skipping_blanks_and_comments(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# CI tokens\n\nt0ken-one\n  t0ken-two  \n", encoding="utf-8")
    read = security("rest.auth=bearer", f"{CREDENTIALS_FILE}={tokens}")
    tokens.unlink()
    assert read.auth == ("bearer", ("t0ken-one", "t0ken-two"))


@pytest.mark.parametrize(
    ("settings", "key", "fragment"),
    [
        (["rest.auth=basic"], "rest.auth", "needs exactly one of"),
        (
            ["rest.auth=bearer", f"{CREDENTIALS}=t", f"{CREDENTIALS_FILE}=/etc/hosts"],
            "rest.auth",
            "needs exactly one of",
        ),
        (["rest.auth=basic", f"{CREDENTIALS}=alice"], CREDENTIALS, "user:password"),
        (["rest.auth=basic", f"{CREDENTIALS}=:pw"], CREDENTIALS, "user:password"),
        (["rest.auth=bearer", f"{CREDENTIALS}= , "], CREDENTIALS, "no credentials"),
    ],
)
def test_rest_auth_mistakes_name_the_key(settings: list[str], key: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as raised:
        security(*settings)
    assert raised.value.key == key
    assert fragment in str(raised.value)


def test_an_unknown_scheme_is_refused_by_the_config() -> None:
    with pytest.raises(ConfigError, match="'none', 'basic' or 'bearer'") as raised:
        security("rest.auth=digest", f"{CREDENTIALS}=t")
    assert raised.value.key == "rest.auth"


def test_errors_say_where_the_value_came_from(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    env = {"SPARKHERD_REST_AUTH_CREDENTIALS_FILE": str(missing)}
    with pytest.raises(ConfigError) as raised:
        security("rest.auth=bearer", env=env)
    assert raised.value.key == CREDENTIALS_FILE
    message = str(raised.value)
    assert message.startswith(f"invalid config: '{CREDENTIALS_FILE}' cannot be read ({missing})")
    assert message.endswith("(from environment variable SPARKHERD_REST_AUTH_CREDENTIALS_FILE)")


def test_an_https_listener_with_its_files(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("not parsed until the server starts", encoding="utf-8")
    read = security(
        "listeners=https://127.0.0.2:8443",
        f"listeners.https.ssl.certfile={cert}",
        f"listeners.https.ssl.keyfile={cert}",
    )
    assert (read.certfile, read.keyfile) == (cert, cert)
    assert isinstance(read.peer_verify, ssl.SSLContext), "one context, not one per forward"
    assert read.peer_verify.verify_mode is ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        (["listeners=https://127.0.0.1:8443"], "listeners.https.ssl.certfile"),
        (
            [
                "listeners=https://127.0.0.1:8443",
                "listeners.https.ssl.certfile=/nonexistent/cert.pem",
                "listeners.https.ssl.keyfile=/nonexistent/key.pem",
            ],
            "listeners.https.ssl.certfile",
        ),
    ],
)
def test_tls_mistakes_name_the_key(settings: list[str], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        security(*settings)
    assert raised.value.key == key
