"""An attacker's PostgreSQL server: it speaks just enough of the startup protocol to ask
every client for its password in clear text (`AuthenticationCleartextPassword`) and
records what each client sends, then refuses the login. It models the server a REST
caller names in a connector's URL, not a component of ours.

It answers `SSLRequest` and `GSSENCRequest` with `N` (no TLS, no GSS encryption), as a
server without TLS does, so a client that would go on in plain text does.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

SSL_REQUEST: Final = 80877103
GSSENC_REQUEST: Final = 80877104
AUTH_CLEARTEXT_PASSWORD: Final = 3
_CLIENT_TIMEOUT_S: Final = 10.0


@dataclass
class Received:
    """What clients sent: each startup message's parameters, each password message."""

    startups: list[dict[str, str]] = field(default_factory=list)
    passwords: list[bytes] = field(default_factory=list)


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the client closed the connection")
        data += chunk
    return data


def _error(message: str) -> bytes:
    fields = b"SFATAL\0C28P01\0M" + message.encode() + b"\0\0"
    return b"E" + struct.pack("!I", 4 + len(fields)) + fields


class CleartextPasswordServer:
    """Listening on a free loopback port while the context is open (`running`)."""

    def __init__(self) -> None:
        self.host = "127.0.0.1"
        self.received = Received()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._listener = socket.create_server((self.host, 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def jdbc_url(self, database: str = "victim") -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}"

    def startups(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self.received.startups)

    def passwords(self) -> list[bytes]:
        with self._lock:
            return list(self.received.passwords)

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError, ConnectionError):
            conn.settimeout(_CLIENT_TIMEOUT_S)
            while True:
                length, code = struct.unpack("!II", _exactly(conn, 8))
                body = _exactly(conn, length - 8)
                if code in (SSL_REQUEST, GSSENC_REQUEST):
                    conn.sendall(b"N")
                    continue
                if code >> 16 != 3:
                    return
                items = body.split(b"\0")
                startup = {
                    items[i].decode(errors="replace"): items[i + 1].decode(errors="replace")
                    for i in range(0, len(items) - 1, 2)
                    if items[i]
                }
                with self._lock:
                    self.received.startups.append(startup)
                conn.sendall(b"R" + struct.pack("!II", 8, AUTH_CLEARTEXT_PASSWORD))
                kind = _exactly(conn, 1)
                (size,) = struct.unpack("!I", _exactly(conn, 4))
                message = _exactly(conn, size - 4)
                if kind == b"p":
                    with self._lock:
                        self.received.passwords.append(message.rstrip(b"\0"))
                conn.sendall(_error("password authentication failed"))
                return

    @contextlib.contextmanager
    def running(self) -> Iterator[CleartextPasswordServer]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stopped.set()
            self._thread.join(5)
            self._listener.close()
