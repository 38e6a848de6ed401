"""Path tricks against one real worker (real broker, real Spark), and the normal form
against Hadoop's own `Path` (issue 28, holes 4 and 5).

The old check read `output.path` with Python's `urlsplit` and `expanduser` and resolved
symlinks before `..`; Hadoop reads `?` and `#` as part of a name, never expands `~`, and
removes `..` as text. Each hostile value below passed that check while Hadoop read it as
another connector's output or checkpoint directory. The worker runs with
`connector.allowed.paths` and a `HOME` of its own (where Python's `~` and Hadoop's part).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, ready_worker
from worker.plugins.locations import AmbiguousLocation, normal_form
from worker.runtime.maven_jars import cache_root

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


class Target:
    """The worker, its files, and a victim connector whose output and checkpoints the
    probes aim at."""

    def __init__(self, worker: WorkerProcess, root: Path) -> None:
        self.worker = worker
        self.root = root
        self.victim_output = root / "victim-out"
        self.victim_checkpoint = worker.checkpoint_root / "victim" / "task-0"

    def call(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        return httpx.request(method, f"{self.worker.url}{path}", timeout=60, **kwargs)  # type: ignore[arg-type]

    def create(self, name: str, config: dict[str, str], state: str = "STOPPED") -> httpx.Response:
        body = {"name": name, "config": config, "initial_state": state}
        return self.call("POST", "/connectors", json=body)

    def refusal(self, config: dict[str, str]) -> str:
        answer = self.create("intruder", config)
        if answer.status_code == 201:  # a hole: leave no intruder for the next probe
            self.call("DELETE", "/connectors/intruder")
        assert answer.status_code == 400, f"{answer.status_code} {answer.text}"
        assert self.call("GET", "/").status_code == 200
        message: str = answer.json()["message"]
        return message


@pytest.fixture(scope="module")
def target(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("paths")
    home = root / "home" / "a" / "b" / "c" / "d" / "e" / "f"
    home.mkdir(parents=True)
    (root / "deep" / "er").mkdir(parents=True)
    (root / "hop").symlink_to(root / "deep" / "er")
    environment = {"HOME": str(home), "XDG_CACHE_HOME": str(cache_root(os.environ))}
    settings = [f"connector.allowed.paths={root}"]
    with ready_worker(
        "paths", broker.bootstrap_servers, root, settings, environment=environment
    ) as worker:
        shot = Target(worker, root)
        victim = shot.create("victim", generator_config(shot.victim_output, 1))
        assert victim.status_code == 201, victim.text
        yield shot


def up_from_cwd_to_root() -> str:
    """`../` enough times to climb from the worker's working directory (this one) to `/`,
    past the `~` that Hadoop takes for a directory there."""
    return "../" * (len(Path.cwd().parts))


def aimed_at(target: Path) -> dict[str, str]:
    """Hole 4's values, each of which Hadoop reads as `target`."""
    sibling = f"{target}-decoy"
    return {
        "query": f"file:{sibling}?/../{target.name}",
        "fragment": f"file:{sibling}#/../{target.name}",
        "tilde": f"~/{up_from_cwd_to_root()}{str(target).lstrip('/')}",
    }


@pytest.mark.parametrize("trick", ["query", "fragment", "tilde"])
@pytest.mark.parametrize("aim", ["output", "checkpoint"])
def test_hole_four_paths_into_another_connectors_files_are_refused(
    target: Target, trick: str, aim: str
) -> None:
    victim = target.victim_output if aim == "output" else target.victim_checkpoint
    value = aimed_at(victim)[trick]
    message = target.refusal({**generator_config(target.root, 1), "output.path": value})
    why = {"query": "'?'", "fragment": "'#'", "tilde": "'~'"}[trick]
    assert "output.path" in message and why in message
    assert "intruder" not in target.call("GET", "/connectors").json()


@pytest.mark.parametrize("aim", ["output", "checkpoint"])
def test_a_leading_space_no_longer_hides_an_overlap(target: Target, aim: str) -> None:
    """The settings strip it, so Spark wrote to the victim's directory; the old check
    judged the text as a relative path under the worker's working directory."""
    victim = target.victim_output if aim == "output" else target.victim_checkpoint
    value = f" {victim}"
    message = target.refusal({**generator_config(target.root, 1), "output.path": value})
    assert "output.path" in message
    assert ("connector victim" if aim == "output" else "checkpoint.root") in message


@pytest.mark.parametrize("aim", ["victim-out", "checkpoints/victim"])
def test_a_dot_dot_after_a_symlink_is_refused(target: Target, aim: str) -> None:
    """Python followed `hop` and then `..` (beside `hop`'s target); Hadoop removes
    `hop/..` as text (the victim's directory)."""
    value = f"{target.root}/hop/../{aim}"
    message = target.refusal({**generator_config(target.root, 1), "output.path": value})
    assert "output.path" in message and "'..'" in message


@pytest.mark.parametrize("glob", ["checkpoint[s]", "checkpoint?", "check*", "{checkpoints}"])
def test_hole_five_a_glob_over_the_checkpoints_is_refused(target: Target, glob: str) -> None:
    reader = {
        "connector.class": "files-to-kafka",
        "input.path": f"{target.root}/{glob}",
        "kafka.bootstrap.servers": target.worker.bootstrap_servers,
        "topic": "published-offsets",
    }
    assert "input.path" in target.refusal(reader)


def test_a_path_outside_the_allowed_roots_is_refused(target: Target, tmp_path: Path) -> None:
    message = target.refusal(generator_config(tmp_path / "out", 1))
    assert "output.path" in message and "connector.allowed.paths" in message
    assert str(target.root) in message
    inside = target.create("inside", generator_config(target.root / "inside", 1))
    assert inside.status_code == 201, inside.text
    assert target.call("DELETE", "/connectors/inside").status_code == 204


def test_a_symlink_repointed_after_admission_fails_the_task(target: Target) -> None:
    """The task puts its paths in normal form again as it starts, so a link moved into
    `checkpoint.root` after the check fails the task instead of writing there."""
    real = target.root / "real-out"
    real.mkdir()
    link = target.root / "moving-link"
    link.symlink_to(real)
    created = target.create("mover", generator_config(link, 1), state="RUNNING")
    assert created.status_code == 201, created.text
    try:
        wait_until(
            lambda: target.call("GET", "/connectors/mover/status").json()["tasks"],
            120,
            what="the task to be assigned",
        )
        link.unlink()
        link.symlink_to(target.worker.checkpoint_root)
        assert target.call("POST", "/connectors/mover/tasks/0/restart").status_code == 204

        def failed_trace() -> str | None:
            task = target.call("GET", "/connectors/mover/tasks/0/status").json()
            return task.get("trace") if task["state"] == "FAILED" else None

        trace = wait_until(failed_trace, 120, what="the task to fail")
        assert "output.path" in trace and "checkpoint.root" in trace
        assert not (target.worker.checkpoint_root / "task-0").exists()
        assert target.call("GET", "/").status_code == 200
    finally:
        target.call("DELETE", "/connectors/mover")


@pytest.fixture(scope="module")
def hadoop() -> Iterator[Any]:
    """A JVM with Hadoop's classes (PySpark's gateway, no SparkContext)."""
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway()
    try:
        yield gateway.jvm
    finally:
        gateway.shutdown()
        gateway.proc.kill()
        gateway.proc.wait()


def hadoops_reading(jvm: Any, text: str, cwd: Path) -> str:
    """Where Hadoop's local file system, working in `cwd`, puts `text` (the OS following
    symlinks), or the qualified URI for another scheme."""
    fs = jvm.org.apache.hadoop.fs
    path = fs.Path(text)
    if path.toUri().getScheme() not in (None, "file"):
        return str(path.toString())
    local = fs.FileSystem.getLocal(jvm.org.apache.hadoop.conf.Configuration())
    local.setWorkingDirectory(fs.Path(str(cwd)))
    qualified = local.makeQualified(path).toUri().getPath()
    return str(jvm.java.io.File(qualified).getCanonicalPath())


def test_every_path_the_checks_accept_is_where_hadoop_goes(hadoop: object, tmp_path: Path) -> None:
    """Each text is refused, or its normal form is Hadoop's own reading of it."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    texts = [
        f"file:{tmp_path}/decoy?/../real",
        f"file:{tmp_path}/decoy#/../real",
        "~/../real",
        f"{tmp_path}/link/../victim",
        f"{tmp_path}/link/out/",
        f"file:///{tmp_path}//link/./out",
        "link/out",
        f"{tmp_path}/a%2e%2e/b",
        f"{tmp_path}/a:b/c",
        "s3a://Bucket/a/./b//",
    ]
    readings = {}
    for text in texts:
        try:
            readings[text] = normal_form(text, tmp_path)
        except AmbiguousLocation:
            continue
    assert readings == {text: hadoops_reading(hadoop, text, tmp_path) for text in readings}
    assert len(readings) == 6
