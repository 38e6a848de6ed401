"""What each PostgreSQL driver is told besides the URL (pure): libpq's keywords cover
every variable libpq would read, the JVM driver's properties carry the URL's parameters
as the check read them, and neither answers a clear-text password request unverified."""

from __future__ import annotations

import ctypes
from pathlib import Path

import psycopg2
import pytest

from worker.connectors.jdbc.connection import (
    JdbcUrlError,
    check_jdbc_uri,
    libpq_parameters,
    parse_jdbc_url,
    pgjdbc_connection,
)
from worker.connectors.jdbc.login_policy import (
    LIBPQ_NEUTRAL,
    NOWHERE,
    environment_problems,
    libpq_keywords,
    pgjdbc_version_problem,
    require_auth,
)

UNLIKE_LIBPQ: dict[str, str | None] = {
    "passfile": NOWHERE,
    "password": "",
    "sslcert": NOWHERE,
    "sslkey": NOWHERE,
    "sslcertmode": "disable",
    "gssencmode": "disable",
}
"""Where the neutral value is not libpq's compiled default, on purpose."""


class _Option(ctypes.Structure):
    _fields_ = [
        ("keyword", ctypes.c_char_p),
        ("envvar", ctypes.c_char_p),
        ("compiled", ctypes.c_char_p),
        ("val", ctypes.c_char_p),
        ("label", ctypes.c_char_p),
        ("dispchar", ctypes.c_char_p),
        ("dispsize", ctypes.c_int),
    ]


def libpq_environment_keywords() -> dict[str, str | None]:
    """Each keyword of psycopg2's own libpq that an environment variable sets, with its
    compiled default (libpq's `PQconndefaults`)."""
    libs = Path(psycopg2.__file__).parent.parent / "psycopg2_binary.libs"
    library = ctypes.CDLL(str(next(libs.glob("libpq-*.so*"))))
    library.PQconndefaults.restype = ctypes.POINTER(_Option)
    options = library.PQconndefaults()
    found: dict[str, str | None] = {}
    index = 0
    while (option := options[index]).keyword:
        if option.envvar:
            compiled = option.compiled.decode() if option.compiled else None
            found[option.keyword.decode()] = compiled
        index += 1
    return found


def test_every_keyword_libpq_reads_from_the_environment_is_given() -> None:
    """A libpq that reads a new variable fails this test until its keyword is given."""
    url = parse_jdbc_url("jdbc:postgresql://h/d")
    keywords = libpq_keywords(libpq_parameters(url, None, None), "os-user")
    environment = libpq_environment_keywords()
    assert environment.keys() - {"service"} <= keywords.keys()
    assert "service" not in keywords
    for keyword, compiled in environment.items():
        if keyword in LIBPQ_NEUTRAL:
            expected = UNLIKE_LIBPQ.get(keyword, compiled or "")
            assert LIBPQ_NEUTRAL[keyword] == expected, keyword
    assert keywords["user"] == "os-user"
    assert keywords["require_auth"] == "!password,!gss,!sspi"


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        ("", "!password,!gss,!sspi"),
        ("?sslmode=require", "!password,!gss,!sspi"),
        ("?sslmode=verify-ca", "!password,!gss,!sspi"),
        ("?sslmode=verify-full", "!gss,!sspi"),
        ("?SSL=true", "!gss,!sspi"),
        ("?ssl=false", "!password,!gss,!sspi"),
    ],
)
def test_a_clear_text_password_only_to_a_verified_server(query: str, refused: str) -> None:
    url = parse_jdbc_url(f"jdbc:postgresql://h/d{query}")
    keywords = libpq_keywords(libpq_parameters(url, "u", "p"), "os-user")
    assert keywords["require_auth"] == refused
    _, properties = pgjdbc_connection(f"jdbc:postgresql://h/d{query}", "u", "p")
    assert properties["requireAuth"] == refused


def test_the_connectors_own_values_win_over_the_neutral_ones() -> None:
    url = parse_jdbc_url(
        "jdbc:postgresql://h:6/d?sslmode=verify-full&sslcert=/c/client.crt"
        "&sslkey=/c/client.key&sslrootcert=/c/ca.crt&ApplicationName=app&options=-c%20a=b"
    )
    keywords = libpq_keywords(libpq_parameters(url, "u", "pw"), "os-user")
    assert {k: keywords[k] for k in ("host", "port", "dbname", "user", "password")} == {
        "host": "h",
        "port": "6",
        "dbname": "d",
        "user": "u",
        "password": "pw",
    }
    assert keywords["sslcert"] == "/c/client.crt" and keywords["sslkey"] == "/c/client.key"
    assert keywords["sslcertmode"] == "allow"
    assert keywords["sslrootcert"] == "/c/ca.crt"
    assert keywords["application_name"] == "app" and keywords["options"] == "-c a=b"
    assert keywords["passfile"] == NOWHERE and keywords["gssencmode"] == "disable"
    assert require_auth("verify-full") == "!gss,!sspi"


def test_the_variables_no_keyword_overrides_are_refused() -> None:
    assert environment_problems({"PGPASSWORD": "x", "HOME": "/root"}) == []
    assert environment_problems({"PGTZ": "UTC", "PGSERVICE": "db", "PGGEQO": "default"}) == [
        "PGSERVICE",
        "PGTZ",
    ]
    assert environment_problems({"PGDATESTYLE": "DEFAULT", "PGSERVICE": "default"}) == ["PGSERVICE"]


def test_the_jvm_driver_gets_what_the_check_read() -> None:
    url, properties = pgjdbc_connection(
        "jdbc:postgresql://[::1]:6543/sales%2Beu?SSL=true&CONNECTTIMEOUT=0&user=u"
        "&currentSchema=s&tcpKeepAlive=true&applicationName=a%2Bb",
        None,
        None,
    )
    assert url == "jdbc:postgresql://[::1]:6543/sales%2Beu"
    assert properties == {
        "user": "u",
        "password": "",
        "sslmode": "verify-full",
        "sslcert": "",
        "sslkey": "",
        "gssEncMode": "disable",
        "connectTimeout": "10",
        "options": "-c search_path=s",
        "tcpKeepAlive": "true",
        "ApplicationName": "a+b",
        "requireAuth": "!gss,!sspi",
    }
    _, named = pgjdbc_connection(
        "jdbc:postgresql://h/d?sslcert=/c/x.crt&sslkey=/c/x.pk8", "u", "pw"
    )
    assert (named["sslcert"], named["sslkey"], named["password"]) == ("/c/x.crt", "/c/x.pk8", "pw")


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("jdbc:postgresql://h/d?loggerFile=/tmp/x", "loggerFile is not taken"),
        ("jdbc:postgresql://h/d?loggerLevel=TRACE", "loggerLevel is not taken"),
        ("jdbc:postgresql://h/d?socketTimeout=0", "socketTimeout is not taken"),
        ("jdbc:postgresql://h/d?requireAuth=password", "requireAuth is not taken"),
        ("jdbc:postgresql://h/d?gssEncMode=require", "gssEncMode is not taken"),
        ("jdbc:postgresql://h/d?service=db", "service is not taken"),
        ("jdbc:postgresql://h/d?sslcert=/c/x.crt", "sslcert and sslkey go together"),
        ("jdbc:postgresql://h/d?sslkey=/c/x.key", "sslcert and sslkey go together"),
        ("jdbc:postgresql://h/d?ssl=maybe", "ssl must be true or false"),
    ],
)
def test_one_allow_list_for_every_jdbc_url(uri: str, reason: str) -> None:
    with pytest.raises(JdbcUrlError, match=reason):
        check_jdbc_uri(uri)
    with pytest.raises(JdbcUrlError, match=reason):
        pgjdbc_connection(uri, None, None)


def test_a_user_in_the_url_must_be_the_connectors() -> None:
    assert check_jdbc_uri("jdbc:postgresql://h/d?user=a", "a") == "jdbc:postgresql://h/d?user=a"
    with pytest.raises(JdbcUrlError, match="names user 'a'"):
        check_jdbc_uri("jdbc:postgresql://h/d?user=a", "b")


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        ("42.7.14", None),
        ("42.7.15-SNAPSHOT", None),
        ("42.8.0", None),
        ("43.0", None),
        ("42.7.13", "42.7.13; 42.7.14 or later is needed"),
        ("42.7.10", "42.7.10; 42.7.14 or later is needed"),
        ("42.2", "42.2; 42.7.14 or later is needed"),
        (None, "is not loaded"),
    ],
)
def test_the_jvm_driver_must_enforce_require_auth(version: str | None, problem: str | None) -> None:
    found = pgjdbc_version_problem(version)
    assert found == problem if problem is None else problem in (found or "")
