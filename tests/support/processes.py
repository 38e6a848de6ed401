"""Real processes for integration tests: a broker and workers on free loopback ports.

Every process is started in its own process group and killed in `finally` blocks, so a
failing test never leaves a broker, a worker or its Spark JVM behind.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from signal import Signals
from typing import Literal

import httpx

from sparkherd.broker.embedded import BrokerEngine, EmbeddedBroker, TansuEngine
from sparkherd.broker.kafka_kraft import KafkaKRaftEngine, ListenerSecurity
from tests.support.jvm_options import spark_driver_options
from tests.support.polling import wait_until
from worker.runtime.temp_space import TEMP_DIR, remove_stale_temp_spaces

LOWEST_PORT = 10_000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def first_ephemeral_port() -> int:
    """Where the kernel's ephemeral ports begin: those it gives an outgoing connection."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    return 32_768


def free_port() -> int:
    """A loopback port nothing listens on, chosen below the ephemeral range.

    A port the kernel hands out (a bind to port 0) is an ephemeral one: in the seconds
    before the process meant for it binds it, an outgoing connection of any test (a Kafka
    client, Spark's py4j, a poll) may get it as its own, and that process fails with
    'Address already in use' (a restarted worker did in CI). Below the range only another
    caller of this function could take it, and the choice is random across processes."""
    span = first_ephemeral_port() - LOWEST_PORT
    while True:
        port = LOWEST_PORT + secrets.randbelow(span)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


def process_tree(root: int) -> set[int]:
    """`root` and every process descended from it, whatever session each runs in."""
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (proc / "stat").read_text()
                parents[int(proc.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree = {root}
    while grown := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= grown
    return tree


BrokerName = Literal["kafka", "tansu"]


@contextlib.contextmanager
def running_broker(
    log_dir: Path, engine: BrokerName = "kafka", security: ListenerSecurity | None = None
) -> Iterator[EmbeddedBroker]:
    """A broker on a free loopback port, stopped on the way out. Apache Kafka unless the
    test is one of the smoke set that keeps the embedded default (Tansu) proven."""
    chosen: BrokerEngine = (
        KafkaKRaftEngine(log_dir / "kafka", security or ListenerSecurity())
        if engine == "kafka"
        else TansuEngine()
    )
    broker = EmbeddedBroker(
        port=free_port(), log_file=log_dir / f"{engine}-broker.log", engine=chosen
    ).start()
    try:
        yield broker
    finally:
        broker.stop()


class ServiceProcess:
    """What a test does to a service it started as a child process (a sparkherd worker,
    a Kafka Connect worker): signals, a graceful stop, a kill, its log. The child runs
    in a process group of its own, its output in `<log_dir>/<name>.log`."""

    name: str
    log_dir: Path
    process: subprocess.Popen[bytes] | None

    def _spawn(self, command: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        log = open(self.log_dir / f"{self.name}.log", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()

    def signal(self, sig: Signals) -> None:
        """`sig` to the process group, as systemd or `kill -- -PGID` send it. (A
        sparkherd worker's Spark JVM runs in a session of its own, outside that group.)"""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)

    def signal_every_process(self, sig: Signals) -> None:
        """`sig` to the main process and every process under it, in whatever session:
        SIGSTOP and SIGCONT freeze and thaw the whole service, as a paused pod or VM
        would be (the group alone would leave a worker's Spark JVM writing)."""
        if self.process is None or self.process.poll() is not None:
            return
        for pid in process_tree(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def stop(self, grace_s: float = 60.0) -> int | None:
        """SIGTERM to the main process alone (as Kubernetes does), wait for a clean
        exit, then SIGKILL whatever is left. The grace is deploy/kubernetes' own: a
        worker's hand-off may take `task.handoff.timeout.ms` (20 s) before its tasks
        stop and Spark does."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(grace_s)
        except subprocess.TimeoutExpired:
            code = None
        self.kill()
        return code

    def kill(self) -> None:
        """SIGKILL to every process of the service: a JVM frozen by a test would never
        see its pipe to the worker close."""
        if self.process is not None:
            self.signal_every_process(signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def log_text(self) -> str:
        return (self.log_dir / f"{self.name}.log").read_text(errors="replace")


WARM_UP_OFF = "worker.warmup.enabled=false"
"""Every test worker's default: a warm-up starts Spark before the worker joins, which a
test that runs no task, or its first one later, pays for in full. The tests about it
(test_shutdown, test_rolling_bounce, test_rest_api's 503 before the join) turn it back on
with `WARM_UP_ON` in their `extra`, which comes later on the command line and so wins."""
WARM_UP_ON = "worker.warmup.enabled=true"


@dataclass
class WorkerProcess(ServiceProcess):
    """A `sparkherd worker` child process with its own REST port and log file."""

    name: str
    bootstrap_servers: str
    checkpoint_root: Path
    log_dir: Path
    extra: Sequence[str] = ()
    rest_port: int = field(default_factory=free_port)
    tls_ca: Path | None = None
    """Set when the worker serves https (its `listeners` in `extra`): the CA to trust."""
    python_path: Sequence[Path] = ()
    """Extra import roots, e.g. where a test plugin's distribution metadata lives."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Variables added to the worker's environment (what the `env` provider reads)."""
    process: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        """The worker's `data.dir`, one per worker name: a restarted worker finds its
        killed predecessor's temp space there, as a restarted pod would."""
        return self.log_dir / f"{self.name}-data"

    @property
    def url(self) -> str:
        scheme = "http" if self.tls_ca is None else "https"
        return f"{scheme}://127.0.0.1:{self.rest_port}"

    @property
    def verify(self) -> ssl.SSLContext | bool:
        return True if self.tls_ca is None else ssl.create_default_context(cafile=self.tls_ca)

    def command(self) -> list[str]:
        settings = [
            f"bootstrap.servers={self.bootstrap_servers}",
            "rest.host.name=127.0.0.1",
            f"rest.port={self.rest_port}",
            f"checkpoint.root={self.checkpoint_root}",
            f"data.dir={self.data_dir}",
            "spark.driver.memory=1g",
            "spark.master=local[2]",
            f"spark.driver.extraJavaOptions={spark_driver_options()}",
            WARM_UP_OFF,
            *self.extra,
            *([] if self.tls_ca is None else [f"listeners={self.url}"]),
        ]
        args = [sys.executable, "-m", "sparkherd.cli", "worker"]
        for setting in settings:
            args += ["--set", setting]
        return args

    def start(self) -> WorkerProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKHERD_")}
        env.update(self.environment)
        if self.python_path:
            roots = [str(p) for p in self.python_path] + [env.get("PYTHONPATH", "")]
            env["PYTHONPATH"] = os.pathsep.join(r for r in roots if r)
        self._spawn(self.command(), env)
        return self

    def wait_tasks_stopped(self, tasks: Sequence[str], since: int, timeout_s: float) -> None:
        """Wait until the log after offset `since` says each of `tasks` ("gen-0") stopped,
        and fail if a query outlived its stop. A query that stopped writes nothing more,
        so "nothing more is written" needs no quiet window after this."""
        stops = wait_until(
            lambda: self.log_text()[since:],
            timeout_s,
            what=f"{self.name} to log {', '.join(tasks)} stopped",
            until=lambda log: all(f"Task {task} stopped" in log for task in tasks),
        )
        assert "did not stop within" not in stops, f"a query of {self.name} outlived its stop"

    def kill(self) -> None:
        """Kill the worker, then remove the temp space it leaves (Spark's local
        directories, 64 MB and more) once its JVM, which holds it too, is gone. The
        space is named for the worker's process id; another worker's is left alone."""
        pid = None if self.process is None else self.process.pid
        super().kill()
        if pid is None:
            return

        def removed() -> bool:
            remove_stale_temp_spaces(self.data_dir)
            return not any((self.data_dir / TEMP_DIR).glob(f"{pid}-*"))

        with contextlib.suppress(AssertionError):
            wait_until(removed, 30, what=f"{self.name}'s temp space to go", interval_s=0.2)

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        wait_until(
            lambda: httpx.get(f"{self.url}/health", timeout=2, verify=self.verify).status_code,
            timeout_s,
            what=f"{self.name} to answer /health with 200",
            until=lambda status: status == 200,
        )


@contextlib.contextmanager
def ready_worker(
    name: str,
    bootstrap_servers: str,
    root: Path,
    extra: Sequence[str] = (),
    python_path: Sequence[Path] = (),
    timeout_s: float = 120.0,
    environment: Mapping[str, str] | None = None,
) -> Iterator[WorkerProcess]:
    """One worker in a group of its own (checkpoints and log under `root`), ready, and
    killed on the way out."""
    worker = WorkerProcess(
        name,
        bootstrap_servers,
        root / "checkpoints",
        root,
        [f"group.id={name}-{free_port()}", *extra],
        python_path=python_path,
        environment=environment or {},
    ).start()
    try:
        worker.wait_ready(timeout_s)
        yield worker
    finally:
        worker.kill()
