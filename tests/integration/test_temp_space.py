"""A worker's Spark temp space lives under its `data.dir`, never in /tmp: a killed worker
leaves its directory there, the next worker started on that data directory removes it,
and no worker removes the directory of another that is still alive."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port, process_tree
from worker.runtime.temp_space import TEMP_DIR, remove_stale_temp_spaces

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


def spaces(data_dir: Path) -> dict[int, Path]:
    """The temp directories under `data_dir`, by the process id of the worker that made
    each (`<pid>-<random>`)."""
    root = data_dir / TEMP_DIR
    found = [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
    return {int(p.name.split("-")[0]): p for p in found}


def spark_in_use(worker: WorkerProcess, data_dir: Path) -> Path:
    """The worker's temp directory once its Spark has made its local directories there."""
    assert worker.process is not None
    pid = worker.process.pid
    space: Path = wait_until(
        lambda: spaces(data_dir).get(pid),
        120,
        what=f"{worker.name}'s Spark to make its block manager's directory",
        until=lambda path: any(path.glob("blockmgr-*")) and any(path.glob("spark-*")),
    )
    return space


def jvm_of(worker: WorkerProcess) -> int:
    assert worker.process is not None
    for pid in process_tree(worker.process.pid):
        with contextlib.suppress(OSError):
            if b"java" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]:
                return pid
    raise AssertionError(f"{worker.name} has no Spark JVM")


@contextlib.contextmanager
def started(workers: list[WorkerProcess]) -> Iterator[list[WorkerProcess]]:
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.wait_ready(120)
        yield workers
    finally:
        for worker in workers:
            worker.kill()


def test_a_killed_workers_temp_space_goes_at_the_next_start_and_a_live_ones_stays(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    shared = tmp_path / "data"

    def worker(name: str, warm: bool) -> WorkerProcess:
        return WorkerProcess(
            name,
            broker.bootstrap_servers,
            tmp_path / "checkpoints",
            tmp_path,
            [
                f"group.id={name}-{free_port()}",
                f"data.dir={shared}",
                f"worker.warmup.enabled={str(warm).lower()}",
            ],
        )

    killed, living, next_one = worker("killed", True), worker("living", True), worker("next", False)
    try:
        with started([killed, living]):
            killed_space = spark_in_use(killed, shared)
            living_space = spark_in_use(living, shared)
            jvm = jvm_of(killed)
            environ = Path(f"/proc/{jvm}/environ").read_bytes().split(b"\0")
            assert f"TMPDIR={killed_space}".encode() in environ
            cmdline = Path(f"/proc/{jvm}/cmdline").read_bytes().split(b"\0")
            assert f"-Djava.io.tmpdir={killed_space}".encode() in cmdline

            killed.signal_every_process(signal.SIGKILL)
            assert killed.process is not None
            killed.process.wait()
            assert killed_space.is_dir(), "the killed worker's directory is what is left"

            with started([next_one]):
                assert not killed_space.exists(), "the next start removes a killed worker's"
                assert living_space.is_dir(), "a live worker's stays"
                assert any(living_space.glob("blockmgr-*"))
                health = httpx.get(f"{living.url}/health", timeout=10)
                assert health.status_code == 200

                assert living.stop() == 0
                assert not living_space.exists(), "a clean stop removes its own"
                assert spaces(shared) == {}
    finally:
        remove_stale_temp_spaces(shared)
