"""The JDBC connection keys without a database: the URL's one form, its translation into
libpq's parameters, the refusals, and the password kept out of every message."""

from __future__ import annotations

import pytest

from worker.connectors.jdbc.connection import (
    DatabaseConnectionError,
    JdbcConnectionSettings,
    JdbcDatabase,
    JdbcUrl,
    JdbcUrlError,
    check_jdbc_uri,
    libpq_parameters,
    parse_jdbc_url,
)
from worker.plugins.api import ConnectorConfigError, parse_config, secret_keys


def test_the_url_s_parts_and_parameters_percent_decoded() -> None:
    url = parse_jdbc_url("jdbc:postgresql://db.example:6543/sales%20eu?ApplicationName=a%26b")
    assert url == JdbcUrl("db.example", 6543, "sales eu", (("ApplicationName", "a&b"),))
    assert url.address == "db.example:6543/sales eu"
    assert parse_jdbc_url("jdbc:postgresql://[::1]/d") == JdbcUrl("::1", 5432, "d")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("jdbc:h2:mem:x", "must be a PostgreSQL JDBC URL"),
        ("jdbc:postgresql:sales", "must be a PostgreSQL JDBC URL"),
        ("jdbc:postgresql://h1,h2/d", "must be a PostgreSQL JDBC URL"),
        ("jdbc:postgresql://h/", "must be a PostgreSQL JDBC URL"),
        ("jdbc:postgresql://h:99999/d", "not a TCP port"),
        ("jdbc:postgresql://h/d?ssl", "has no value"),
        ("jdbc:postgresql://h/d?ssl=true&socketFactory=x.Y", "loads a class"),
        ("jdbc:postgresql://h/d?SSLFACTORY=x.Y", "loads a class"),
        ("jdbc:postgresql://h/d?password=hunter2", "connection.password"),
    ],
)
def test_urls_refused(url: str, reason: str) -> None:
    with pytest.raises(JdbcUrlError, match=reason) as refused:
        check_jdbc_uri(url)
    assert "hunter2" not in str(refused.value)


def test_libpq_parameters_translate_the_driver_s() -> None:
    url = parse_jdbc_url(
        "jdbc:postgresql://h/d?ssl=true&currentSchema=my schema&ApplicationName=app"
        "&connectTimeout=3&tcpKeepAlive=true&options=-c%20statement_timeout=5s"
    )
    assert libpq_parameters(url, "u", "p") == {
        "host": "h",
        "port": "5432",
        "dbname": "d",
        "connect_timeout": "3",
        "sslmode": "verify-full",
        "application_name": "app",
        "keepalives": "1",
        "options": "-c search_path=my\\ schema -c statement_timeout=5s",
        "user": "u",
        "password": "p",
    }


def test_connect_timeout_is_bounded_by_default_and_never_forever() -> None:
    assert libpq_parameters(parse_jdbc_url("jdbc:postgresql://h/d"), None, None) == {
        "host": "h",
        "port": "5432",
        "dbname": "d",
        "connect_timeout": "10",
    }
    forever = parse_jdbc_url("jdbc:postgresql://h/d?connectTimeout=0")
    assert libpq_parameters(forever, None, None)["connect_timeout"] == "10"


@pytest.mark.parametrize(
    ("url", "user", "reason"),
    [
        ("jdbc:postgresql://h/d?reWriteBatchedInserts=true", None, "not taken"),
        ("jdbc:postgresql://h/d?sslmode=sometimes", None, "sslmode must be"),
        ("jdbc:postgresql://h/d?ssl=yes", None, "ssl must be true or false"),
        ("jdbc:postgresql://h/d?connectTimeout=soon", None, "whole number"),
        ("jdbc:postgresql://h/d?user=a", "b", "names user 'a'"),
    ],
)
def test_parameters_refused(url: str, user: str | None, reason: str) -> None:
    with pytest.raises(JdbcUrlError, match=reason):
        libpq_parameters(parse_jdbc_url(url), user, None)


def test_settings_hide_the_password_and_refuse_a_bad_url() -> None:
    assert secret_keys(JdbcConnectionSettings) == {"connection.password"}
    settings = parse_config(
        JdbcConnectionSettings,
        {
            "connection.url": "jdbc:postgresql://h:1/d",
            "connection.user": "u",
            "connection.password": "hunter2",
        },
    )
    database = settings.database
    assert database == JdbcDatabase(JdbcUrl("h", 1, "d"), "u", "hunter2")
    assert "hunter2" not in repr(database) and "hunter2" not in str(database)
    assert database.hide("FATAL: password HUNTER2 wrong") == "FATAL: password [hidden] wrong"
    with pytest.raises(ConnectorConfigError, match=r"connection\.url") as refused:
        parse_config(
            JdbcConnectionSettings,
            {"connection.url": "jdbc:mysql://h/d", "connection.password": "hunter2"},
        )
    assert "hunter2" not in str(refused.value)


def test_an_unreachable_server_fails_fast_naming_it_not_the_password() -> None:
    from tests.support.processes import free_port

    port = free_port()
    database = JdbcDatabase(parse_jdbc_url(f"jdbc:postgresql://127.0.0.1:{port}/d"), "u", "pw9")
    with pytest.raises(DatabaseConnectionError) as refused:
        database.connect()
    message = str(refused.value)
    assert message.startswith(f"Cannot connect to PostgreSQL 127.0.0.1:{port}/d as u: ")
    assert "refused" in message
    assert "pw9" not in message
