"""What the two PostgreSQL drivers are told besides the URL, so that a login to a server a
REST caller names carries what the connector names and nothing of the worker's.

Two things are kept from such a server. The password in clear text: a server may ask
for it (`AuthenticationCleartextPassword`), and a server of the caller's choosing would
then have it; it is answered only over TLS with a verified server (`sslmode=verify-full`,
which the JVM driver's `ssl=true` also means). And the worker's ambient credentials:
GSSAPI/SSPI would log in with the worker's Kerberos tickets, and libpq and the JVM
driver read a password, a client certificate and much else from the worker's
environment and home directory when the connection does not name them.

libpq (psycopg2's, version 17) reads an environment variable for each keyword a
connection leaves unset, and `~/.pgpass` and `~/.postgresql/postgresql.crt|.key` for a
password and client certificate it was not given. Changing the process environment
around a connection would change it for every thread of the worker, so instead every
keyword that has a variable is given, always: the connector's value, else a neutral
one (libpq's own compiled default, or a path no file can have, `/dev/null/nowhere`, for
the password file and the certificate and key; a client certificate only when the
connector names both it and its key). Four variables have no keyword that overrides
them: `PGSERVICE` (a service lookup fills in what a connection leaves unset and fails
the connection when the service is not found) and `PGDATESTYLE`, `PGTZ`, `PGGEQO`
(sent to every server as session settings). A worker whose environment sets one of
these opens no connection (`environment_problems`), rather than send them on.

The JVM driver (pgjdbc, 42.7.14 in the worker) reads no `PG*` variable but a password
file (`org.postgresql.pgpassfile`, `PGPASSFILE`, `~/.pgpass`) when it has no password,
a service file only for a URL's `service=` (not taken), and a client certificate and key
from `~/.postgresql` unless told otherwise. Its connection properties say otherwise:
an empty password when the connector gives none (nothing is looked up, a server that
asks is refused), empty `sslcert`/`sslkey` (no client key is selected), GSS encryption
off, and `requireAuth` (42.7.11 and later; before 42.7.14 a list that excludes every
method is not enforced, CVE-2026-107314: the lists here never exclude every method).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

NOWHERE: Final = "/dev/null/nowhere"
"""A path no file can ever have (`/dev/null` is no directory): libpq finds no password
file, certificate or key there, and says nothing about it."""
VERIFIED_TLS: Final = "verify-full"
_NOT_WITHOUT_VERIFIED_TLS: Final = "password"
_NEVER: Final = ("gss", "sspi")
"""Methods that log in with the worker's own Kerberos or Windows credentials."""

LIBPQ_NEUTRAL: Final[Mapping[str, str]] = MappingProxyType(
    {
        "passfile": NOWHERE,
        "password": "",
        "channel_binding": "prefer",
        "hostaddr": "",
        "client_encoding": "",
        "options": "",
        "application_name": "",
        "sslmode": "prefer",
        "sslnegotiation": "postgres",
        "sslcompression": "0",
        "sslcert": NOWHERE,
        "sslkey": NOWHERE,
        "sslcertmode": "disable",
        "sslrootcert": "",
        "sslcrl": "",
        "sslcrldir": "",
        "sslsni": "1",
        "requirepeer": "",
        "ssl_min_protocol_version": "TLSv1.2",
        "ssl_max_protocol_version": "",
        "gssencmode": "disable",
        "krbsrvname": "postgres",
        "gsslib": "",
        "gssdelegation": "0",
        "target_session_attrs": "any",
        "load_balance_hosts": "disable",
    }
)
"""libpq 17's keywords that an environment variable sets when a connection does not,
each with the value libpq has with no variable set. Empty means unset for libpq here:
`sslrootcert` and `sslcrl` then are libpq's `~/.postgresql/root.crt|root.crl`, trust
settings rather than credentials. Two differ from libpq's defaults on purpose:
`sslcertmode=disable` (no client certificate unless the connector names one) and
`gssencmode=disable` (GSS encryption would use the worker's Kerberos tickets)."""
UNOVERRIDABLE_VARIABLES: Final = ("PGSERVICE", "PGDATESTYLE", "PGTZ", "PGGEQO")
"""Variables libpq acts on whatever keywords a connection gives."""
PGJDBC_MINIMUM: Final = (42, 7, 14)


def require_auth(sslmode: str) -> str:
    """The authentication methods a login refuses, in the syntax both drivers take:
    GSSAPI and SSPI always, a clear-text password unless the server is verified."""
    refused = _NEVER if sslmode == VERIFIED_TLS else (_NOT_WITHOUT_VERIFIED_TLS, *_NEVER)
    return ",".join(f"!{method}" for method in refused)


def libpq_keywords(url_keywords: Mapping[str, str], os_user: str) -> dict[str, str]:
    """psycopg2's `connect` keywords: the connection's own (`url_keywords`, from the URL
    and the connector's user and password), every other keyword an environment variable
    would set at its neutral value, the worker's operating-system user as libpq's own
    default user, and the methods refused."""
    keywords = {**LIBPQ_NEUTRAL, "user": os_user, **url_keywords}
    if "sslcert" in url_keywords:
        keywords["sslcertmode"] = "allow"
    keywords["require_auth"] = require_auth(keywords["sslmode"])
    return keywords


def environment_problems(environ: Mapping[str, str]) -> list[str]:
    """The variables of `environ` that libpq would act on for every connection."""
    return [
        name
        for name in UNOVERRIDABLE_VARIABLES
        if name in environ and not (name != "PGSERVICE" and environ[name].lower() == "default")
    ]


_PGJDBC_NAMES: Final = {
    "user": "user",
    "password": "password",
    "sslmode": "sslmode",
    "sslrootcert": "sslrootcert",
    "sslcert": "sslcert",
    "sslkey": "sslkey",
    "options": "options",
    "application_name": "ApplicationName",
    "connect_timeout": "connectTimeout",
    "keepalives": "tcpKeepAlive",
}
"""libpq's keyword -> the JVM driver's property of the same meaning."""


def pgjdbc_properties(url_keywords: Mapping[str, str]) -> dict[str, str]:
    """The JVM driver's connection properties for the connection `url_keywords` (libpq's
    keywords for it, less host, port and database, which go into the URL): the same
    values under the driver's names, and what keeps the worker's credentials out."""
    properties = {
        _PGJDBC_NAMES[keyword]: value
        for keyword, value in url_keywords.items()
        if keyword in _PGJDBC_NAMES
    }
    if "tcpKeepAlive" in properties:
        properties["tcpKeepAlive"] = "true" if properties["tcpKeepAlive"] == "1" else "false"
    return {
        "password": "",
        "sslcert": "",
        "sslkey": "",
        "gssEncMode": "disable",
        **properties,
        "requireAuth": require_auth(url_keywords.get("sslmode", "prefer")),
    }


def pgjdbc_version_problem(version: str | None) -> str | None:
    """Why the JVM driver of `version` (None: none on the classpath) cannot be used."""
    wanted = ".".join(str(part) for part in PGJDBC_MINIMUM)
    if version is None:
        return f"PostgreSQL's JDBC driver (org.postgresql, {wanted} or later) is not loaded"
    parts = []
    for part in version.split("."):
        digits = "".join(c for c in part if c.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    if tuple(parts) < PGJDBC_MINIMUM:
        return (
            f"PostgreSQL's JDBC driver is {version}; {wanted} or later is needed to refuse "
            "a clear-text password to a server that is not verified (requireAuth)"
        )
    return None
