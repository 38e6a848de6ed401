"""A throw-away PostgreSQL server for tests: Debian's PostgreSQL 15, initialised in a
temporary directory, on a free loopback port, with one password-authenticated user and
database, and stopped on the way out whatever happened.

`initdb` and the server refuse to run as root, so as root they run as the `postgres`
user (`runuser`), which then owns the data directory. Clients connect over TCP only
(no Unix socket), with `scram-sha-256`: the same password check a production server
makes, so a test of a wrong password sees the server's real refusal. A test may stop
the server and start it again on the same port and data (`stop`, `start`), as an
operator's restart does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import psycopg2

from tests.support.processes import free_port

BIN_DIR: Final = Path("/usr/lib/postgresql/15/bin")
SERVER_USER: Final = "postgres"
"""The operating-system user the server runs as when the tests run as root."""


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    database: str
    root: Path | None = None
    """The server's directory (data and log), for `stop` and `start`."""

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    @property
    def url(self) -> str:
        """A SQLAlchemy / libpq URL with the credentials (what pyiceberg's SqlCatalog takes)."""
        return (
            f"postgresql+psycopg2://{self.user}:{self.password}@{self.host}:{self.port}/"
            f"{self.database}"
        )

    @property
    def dsn(self) -> str:
        return (
            f"host={self.host} port={self.port} dbname={self.database} user={self.user} "
            f"password={self.password}"
        )

    def connection_config(self) -> dict[str, str]:
        """The JDBC connectors' keys for this server's database and user."""
        return {
            "connection.url": self.jdbc_url,
            "connection.user": self.user,
            "connection.password": self.password,
        }

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement, committed on its own (autocommit: `CREATE DATABASE` too);
        its rows, if it has any."""
        with contextlib.closing(psycopg2.connect(self.dsn)) as connection:
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute(sql, tuple(parameters))
                return list(cursor.fetchall()) if cursor.description else []

    def stop(self) -> None:
        """Stop the server as a crash would (`-m immediate`): clients lose their
        connections mid-transaction."""
        assert self.root is not None
        _stop(self.root)

    def start(self) -> None:
        assert self.root is not None
        _start(self.root, self.port)


def _pg_ctl(root: Path) -> list[str]:
    return [str(BIN_DIR / "pg_ctl"), "-D", str(root / "data")]


def _start(root: Path, port: int) -> None:
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories=''"
    log = str(root / "server.log")
    subprocess.run(
        _as_server_user([*_pg_ctl(root), "-w", "-t", "60", "-l", log, "-o", options, "start"]),
        check=True,
        capture_output=True,
    )


def _stop(root: Path) -> None:
    subprocess.run(
        _as_server_user([*_pg_ctl(root), "-m", "immediate", "stop"]), capture_output=True
    )


def _as_server_user(command: Sequence[str]) -> list[str]:
    as_root = os.geteuid() == 0
    return ["runuser", "-u", SERVER_USER, "--", *command] if as_root else list(command)


@contextlib.contextmanager
def running_postgres(
    user: str = "sparkherd", password: str = "sparkherd-test", database: str = "sparkherd"
) -> Iterator[PostgresServer]:
    """A fresh server with `user` (password-authenticated, owner of `database`), removed
    on the way out: `pg_ctl stop -m immediate` and its directory deleted."""
    root = Path(tempfile.mkdtemp(prefix="sparkherd-postgres-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, SERVER_USER)
    root.chmod(0o700)
    port = free_port()
    password_file = root / "password"
    password_file.write_text(password + "\n")
    if os.geteuid() == 0:
        shutil.chown(password_file, SERVER_USER)
    started = False
    try:
        subprocess.run(
            _as_server_user(
                [
                    str(BIN_DIR / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    user,
                    f"--pwfile={password_file}",
                    "--auth=scram-sha-256",
                    "--encoding=UTF8",
                    "--no-sync",
                ]
            ),
            check=True,
            capture_output=True,
        )
        started = True
        _start(root, port)
        server = PostgresServer("127.0.0.1", port, user, password, "postgres")
        server.execute(f'CREATE DATABASE "{database}"')
        yield PostgresServer("127.0.0.1", port, user, password, database, root)
    finally:
        if started:
            _stop(root)
        shutil.rmtree(root, ignore_errors=True)
