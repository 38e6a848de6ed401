"""Where a database connector's PostgreSQL is and how it logs in: Confluent's JDBC keys
`connection.url`, `connection.user` and `connection.password`, and the one way to open a
connection from them.

The URL is a JDBC URL, as users of Confluent's connectors have it, but the connectors
talk to PostgreSQL through libpq (psycopg2), so the URL is read here into libpq's
parameters: only `jdbc:postgresql://host[:port]/database[?parameters]`, and only the
parameters that have a libpq counterpart; any other is refused rather than silently
dropped. A URL that goes to the JVM driver instead (kafka-to-iceberg's jdbc catalog)
passes the same check (`check_jdbc_uri`), and the driver is handed what the check
judged, not the text (`pgjdbc_connection`): the host, port and database as a URL, every
parameter as a connection property under the driver's name.

Either driver is told, besides, to send no clear-text password to a server that is not
verified, and to take no credential from the worker's environment or home directory:
`worker.connectors.jdbc.login_policy` says how, and why without touching the worker's
environment.

The password is a secret: a `SecretStr` setting (hidden in every GET and 400, as
Connect's PASSWORD type), never put into a message here, and a connection failure names
the server (`host:port/database`) and the user only. A password in the URL is refused,
since the URL is shown as it is.
"""

from __future__ import annotations

import math
import os
import pwd
import re
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from worker.config.providers import hide
from worker.connectors.jdbc.login_policy import (
    environment_problems,
    libpq_keywords,
    pgjdbc_properties,
)
from worker.plugins.api import HIDDEN, NonEmptyStr

URL_KEY: Final = "connection.url"
USER_KEY: Final = "connection.user"
PASSWORD_KEY: Final = "connection.password"
CONNECT_TIMEOUT_S: Final = 10
"""libpq's `connect_timeout` unless the URL sets `connectTimeout`: an unreachable
server fails the task within this long, not after the operating system's minutes."""
DEFAULT_PORT: Final = 5432

_CLASS_PARAMETERS: Final = (
    "socketfactory",
    "sslfactory",
    "sslhostnameverifier",
    "sslpasswordcallback",
    "authenticationpluginclassname",
)
"""PostgreSQL JDBC URL parameters that name a class the driver instantiates."""
_URL = re.compile(
    r"jdbc:postgresql://(?P<host>\[[0-9A-Fa-f:.]+\]|[^/:?\[\],@]+)(?::(?P<port>\d{1,5}))?"
    r"/(?P<database>[^?/]+)(?:\?(?P<parameters>.*))?",
    re.DOTALL,
)
_SSL_MODES: Final = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_SAME_NAME: Final = ("sslmode", "sslrootcert", "sslcert", "sslkey", "options", "user")
"""JDBC parameters that libpq takes under the same name."""
_RENAMED: Final = {"connecttimeout": "connect_timeout", "applicationname": "application_name"}
_TRANSLATED: Final = ("ssl", "currentschema", "tcpkeepalive")
"""Parameters whose value changes on the way (see `libpq_parameters`)."""
FORM: Final = "jdbc:postgresql://host[:port]/database[?parameters]"


class JdbcUrlError(ValueError):
    """A `connection.url` that cannot be used; the message says why (never a password)."""


class DatabaseConnectionError(RuntimeError):
    """The database could not be reached or refused the login: names the server and the
    user, and the server's or libpq's reason, never the password."""


def check_jdbc_uri(uri: str, user: str | None = None) -> str:
    """`uri`, if it is a URL the connectors take: of the one form, with only the
    parameters libpq has a counterpart for (the same for the JVM driver, which then
    cannot be made to load a class, write a log file or wait forever), and naming no
    other user than `user`. The one check of every JDBC URL a connector is given."""
    libpq_parameters(parse_jdbc_url(uri), user, None)
    return uri


def pgjdbc_connection(
    uri: str, user: str | None, password: str | None
) -> tuple[str, dict[str, str]]:
    """The URL and connection properties the JVM driver gets for `uri` (checked as
    `check_jdbc_uri` checks it): the URL carries only host, port and database, so the
    driver reads each parameter from the properties, as libpq would have it."""
    url = parse_jdbc_url(uri)
    keywords = libpq_parameters(url, user, password)
    host = f"[{url.host}]" if ":" in url.host else url.host
    for place in ("host", "port", "dbname"):
        del keywords[place]
    return (
        f"jdbc:postgresql://{host}:{url.port}/{quote(url.database, safe='')}",
        pgjdbc_properties(keywords),
    )


@dataclass(frozen=True)
class JdbcUrl:
    host: str
    port: int
    database: str
    parameters: tuple[tuple[str, str], ...] = ()

    @property
    def address(self) -> str:
        """`host:port/database`: what a message names the server by."""
        return f"{self.host}:{self.port}/{self.database}"


def url_files(url: str) -> list[str]:
    """The files on the worker a URL names for the TLS handshake: a client certificate
    and key, a root certificate (`sslrootcert=system` names the system's store, no file)."""
    return [
        value
        for name, value in parse_jdbc_url(url).parameters
        if name.lower() in ("sslcert", "sslkey", "sslrootcert") and value != "system"
    ]


def parse_jdbc_url(url: str) -> JdbcUrl:
    """`jdbc:postgresql://host[:port]/database[?k=v&...]`, percent-decoded as the driver
    decodes it; one host (libpq and the JVM driver would each read a list differently)."""
    match = _URL.fullmatch(url.strip())
    if match is None:
        raise JdbcUrlError(f"must be a PostgreSQL JDBC URL: {FORM}")
    port = int(match["port"]) if match["port"] else DEFAULT_PORT
    if not 0 < port < 65536:
        raise JdbcUrlError(f"port {port} is not a TCP port")
    parameters: list[tuple[str, str]] = []
    for item in (match["parameters"] or "").split("&"):
        if not item:
            continue
        name, equals, value = item.partition("=")
        if not name or not equals:
            raise JdbcUrlError(f"parameter {unquote(name or item)!r} has no value (name=value)")
        parameters.append((unquote(name), unquote(value)))
    for name, _ in parameters:
        if name.lower() in _CLASS_PARAMETERS:
            raise JdbcUrlError(f"may not set {name}, which loads a class into the worker")
        if name.lower() in ("password", "sslpassword"):
            raise JdbcUrlError(
                f"may not carry a password ({name}): the URL is shown as it is; put it in "
                f"{PASSWORD_KEY}, which is kept hidden"
            )
    host = match["host"].strip("[]")
    return JdbcUrl(host, port, unquote(match["database"]), tuple(parameters))


def libpq_parameters(url: JdbcUrl, user: str | None, password: str | None) -> dict[str, str]:
    """psycopg2's `connect` keywords for `url`: each URL parameter as libpq names it
    (`ssl=true` is the driver's `sslmode=verify-full`; `currentSchema` becomes the
    session's `search_path`), `connect_timeout` bounded by default."""
    keywords: dict[str, str] = {
        "host": url.host,
        "port": str(url.port),
        "dbname": url.database,
        "connect_timeout": str(CONNECT_TIMEOUT_S),
    }
    options: list[str] = []
    for name, value in url.parameters:
        lowered = name.lower()
        if lowered in _SAME_NAME:
            if lowered == "options":
                options.append(value)
            else:
                keywords[lowered] = value
        elif lowered in _RENAMED:
            keywords[_RENAMED[lowered]] = value
        elif lowered == "ssl":
            keywords.setdefault("sslmode", "verify-full" if _true(name, value) else "disable")
        elif lowered == "currentschema":
            options.append(f"-c search_path={_option_value(value)}")
        elif lowered == "tcpkeepalive":
            keywords["keepalives"] = "1" if _true(name, value) else "0"
        else:
            taken = ", ".join(sorted({*_SAME_NAME, *_RENAMED, *_TRANSLATED}))
            raise JdbcUrlError(
                f"parameter {name} is not taken (these connectors talk to PostgreSQL "
                f"through libpq); the parameters taken: {taken} (any letter case)"
            )
    if ("sslcert" in keywords) != ("sslkey" in keywords):
        raise JdbcUrlError(
            "sslcert and sslkey go together: a client certificate or key is never taken "
            "from the worker's home directory"
        )
    if keywords.get("sslmode", "prefer") not in _SSL_MODES:
        raise JdbcUrlError(f"sslmode must be one of {', '.join(_SSL_MODES)}")
    if not keywords["connect_timeout"].isdigit():
        raise JdbcUrlError("connectTimeout must be a whole number of seconds")
    if int(keywords["connect_timeout"]) == 0:
        # libpq's 0 is "wait forever"; the driver's is the same, but a task must fail.
        keywords["connect_timeout"] = str(CONNECT_TIMEOUT_S)
    if options:
        keywords["options"] = " ".join(options)
    if user is not None:
        if keywords.get("user", user) != user:
            raise JdbcUrlError(f"names user {keywords['user']!r}, and {USER_KEY} another")
        keywords["user"] = user
    if password is not None:
        keywords["password"] = password
    return keywords


def _true(name: str, value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise JdbcUrlError(f"{name} must be true or false")
    return value.lower() == "true"


def _option_value(value: str) -> str:
    """A value in libpq's `options`, where spaces separate and backslash escapes."""
    return re.sub(r"([\\ ])", r"\\\1", value)


@dataclass(frozen=True)
class JdbcDatabase:
    """One PostgreSQL database and a login to it; `connect` opens a connection."""

    url: JdbcUrl
    user: str | None = None
    password: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        who = f" as {self.user}" if self.user else ""
        return f"PostgreSQL {self.url.address}{who}"

    def hide(self, text: str) -> str:
        """`text` without the password (a driver's message could quote it)."""
        return hide(text, {self.password: HIDDEN} if self.password else {})

    def connect(self, within_s: float = math.inf) -> Any:
        """A new psycopg2 connection (not in autocommit: every statement is in the
        transaction the caller commits), with nothing of the worker's environment
        (`login_policy`), given up after `within_s` (whole seconds, as libpq counts them)
        if that is sooner than `connect_timeout`. The caller closes it."""
        import psycopg2

        unsafe = environment_problems(os.environ)
        if unsafe:
            raise DatabaseConnectionError(
                f"Cannot connect to {self}: the worker's environment sets {', '.join(unsafe)}, "
                "which libpq would act on or send to every server it connects to; unset it "
                "for the worker (a connection's session settings go into connection.url's "
                "options parameter)"
            )
        keywords = libpq_keywords(
            libpq_parameters(self.url, self.user, self.password), self.user or self._os_user()
        )
        if within_s < int(keywords["connect_timeout"]):
            keywords["connect_timeout"] = str(max(1, math.ceil(within_s)))
        try:
            return psycopg2.connect(**keywords)
        except psycopg2.Error as exc:
            reason = self.hide(" ".join(str(exc).split()))
            raise DatabaseConnectionError(f"Cannot connect to {self}: {reason}") from None

    def _os_user(self) -> str:
        """libpq's own default user, the worker's operating-system user, given by name so
        that `PGUSER` does not apply."""
        try:
            return pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            raise DatabaseConnectionError(
                f"Cannot connect to {self}: the worker's operating-system user has no name "
                f"to log in as; set {USER_KEY}"
            ) from None


class JdbcConnectionSettings(BaseModel):
    """The settings of a connector that reads or writes PostgreSQL: a base for its model
    (as `KafkaConnectionSettings` is for Kafka)."""

    model_config = ConfigDict(frozen=True)

    connection_url: NonEmptyStr = Field(
        alias=URL_KEY, description=f"The database, as a JDBC URL: {FORM}"
    )
    connection_user: NonEmptyStr | None = Field(
        default=None, alias=USER_KEY, description="The user to log in as"
    )
    connection_password: SecretStr | None = Field(
        default=None, alias=PASSWORD_KEY, description="The user's password (kept hidden)"
    )

    @field_validator("connection_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_jdbc_uri(value)

    @model_validator(mode="after")
    def _user(self) -> JdbcConnectionSettings:
        check_jdbc_uri(self.connection_url, self.connection_user)
        return self

    @property
    def database(self) -> JdbcDatabase:
        password = self.connection_password
        return JdbcDatabase(
            parse_jdbc_url(self.connection_url),
            self.connection_user,
            None if password is None else password.get_secret_value(),
        )
