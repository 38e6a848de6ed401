"""A connection made during a task's start gives up when the start must end, not after
libpq's whole `connect_timeout`: a stop during the start of a connector naming an address
that never answers is not held for it."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from worker.connectors.jdbc.connection import (
    CONNECT_TIMEOUT_S,
    DatabaseConnectionError,
    JdbcDatabase,
    parse_jdbc_url,
)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def test_a_connection_gives_up_within_what_the_start_has_left(silent_port: int) -> None:
    database = JdbcDatabase(parse_jdbc_url(f"jdbc:postgresql://127.0.0.1:{silent_port}/shop"))
    began = time.monotonic()
    with pytest.raises(DatabaseConnectionError, match="timeout"):
        database.connect(within_s=0.5)
    assert time.monotonic() - began < CONNECT_TIMEOUT_S / 2
