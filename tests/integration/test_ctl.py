"""`sparkherd ctl` as a user runs it (a subprocess) against one live worker.

The worker serves https with basic authentication, so every call also proves the CA and
credential handling; one worker (module-scoped) serves every test. A failure must be
one line on stderr, with the server's message where there is one, and a non-zero exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 120
USER, PASSWORD = "admin", "s3cret"


@dataclass
class Ctl:
    """Runs `sparkherd ctl` against the worker, with its URL, CA and credentials in the
    environment (as an operator would export them) unless a test says otherwise."""

    worker: WorkerProcess
    cacert: Path

    def env(self, **overrides: str | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKHERD_")}
        env |= {
            "SPARKHERD_URL": self.worker.url,
            "SPARKHERD_CACERT": str(self.cacert),
            "SPARKHERD_USER": USER,
            "SPARKHERD_PASSWORD": PASSWORD,
        }
        for key, value in overrides.items():
            env.pop(key, None)
            if value is not None:
                env[key] = value
        return env

    def run(
        self, *argv: str, stdin: str | None = None, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sparkherd.cli", "ctl", *argv],
            input=stdin,
            capture_output=True,
            text=True,
            env=dict(env or self.env()),
            timeout=TIMEOUT_S + 60,
        )

    def ok(self, *argv: str, stdin: str | None = None) -> str:
        done = self.run(*argv, stdin=stdin)
        assert done.returncode == 0, f"ctl {' '.join(argv)}: {done.returncode} {done.stderr}"
        assert done.stderr == ""
        return done.stdout

    def json(self, *argv: str) -> Any:
        return json.loads(self.ok(*argv, "-o", "json"))

    def fails(self, *argv: str, code: int = 1, env: Mapping[str, str] | None = None) -> str:
        """The one line a failed call prints (without the `sparkherd ctl: ` prefix)."""
        done = self.run(*argv, env=env)
        assert done.returncode == code, f"ctl {' '.join(argv)}: {done.returncode} {done.stderr}"
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("sparkherd ctl: ")
        return done.stderr.removeprefix("sparkherd ctl: ").rstrip("\n")

    def states(self, name: str) -> tuple[str, list[str]]:
        described = self.json("describe", "connector", name)
        return described["connector"]["state"], [t["state"] for t in described["tasks"]]

    def wait_states(self, name: str, connector: str, tasks: list[str]) -> None:
        wait_until(
            lambda: self.states(name),
            TIMEOUT_S,
            what=f"{name}: {connector} {tasks}",
            until=lambda seen: seen == (connector, tasks),
        )


@pytest.fixture(scope="module")
def ctl(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ctl]:
    root = tmp_path_factory.mktemp("ctl-worker")
    cert, key = root / "cert.pem", root / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    settings = [
        f"group.id=ctl-{free_port()}",
        f"listeners.https.ssl.certfile={cert}",
        f"listeners.https.ssl.keyfile={key}",
        "rest.auth=basic",
        f"rest.auth.credentials={USER}:{PASSWORD}",
        "kafka.jvm.connector=none",
    ]
    worker = WorkerProcess(
        "ctl-worker", broker.bootstrap_servers, root / "checkpoints", root, settings, tls_ca=cert
    ).start()
    try:
        worker.wait_ready(TIMEOUT_S)
        yield Ctl(worker, cert)
    finally:
        worker.kill()


def test_workers_plugins_and_log_levels(ctl: Ctl) -> None:
    address = f"127.0.0.1:{ctl.worker.rest_port}"
    workers = ctl.ok("get", "workers")
    [leader] = [line for line in workers.splitlines() if line.startswith("Leader:")]
    assert leader.endswith(address)
    [row] = [line.split() for line in workers.splitlines() if line.startswith(address)]
    assert row[0] == address and "running" in row
    assert [w["id"] for w in ctl.json("get", "workers")["workers"]] == [address]

    plugins = [line.split() for line in ctl.ok("get", "plugins").splitlines()]
    generator = ["generator", "worker.connectors.generator.GeneratorConnector", "source", "0.1.0"]
    assert generator in plugins
    assert any(p["class"].endswith("GeneratorConnector") for p in ctl.json("get", "plugins"))

    changed = ctl.ok("set", "logger", "herder", "DEBUG")
    assert changed.startswith("logger herder set to DEBUG on this worker; changed: herder")
    assert ctl.json("get", "loggers")["herder"]["level"] == "DEBUG"
    assert "Invalid log level 'LOUD'" in ctl.fails("set", "logger", "herder", "LOUD")
    ctl.ok("set", "logger", "herder", "INFO")

    assert ctl.ok("set", "logger", "worker.spark", "trace", "--cluster") == (
        "logger worker.spark set to TRACE on every worker\n"
    )
    wait_until(
        lambda: ctl.json("get", "loggers").get("worker.spark", {}).get("level"),
        TIMEOUT_S,
        what="the cluster-wide level applied",
        until=lambda level: level == "TRACE",
    )
    assert any(
        line.split()[:2] == ["worker.spark", "TRACE"]
        for line in ctl.ok("get", "loggers").splitlines()
    )


def test_a_connectors_life_through_ctl(ctl: Ctl, tmp_path: Path) -> None:
    address = f"127.0.0.1:{ctl.worker.rest_port}"
    config = generator_config(tmp_path / "out", 1)
    manifest = tmp_path / "lifecycle.properties"
    manifest.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
    assert ctl.ok("apply", "-f", str(manifest)) == "connector lifecycle created\n"
    ctl.wait_states("lifecycle", "RUNNING", ["RUNNING"])

    [row] = [line.split() for line in ctl.ok("get", "connectors").splitlines()[1:]]
    assert row == ["lifecycle", "source", "generator", "RUNNING", "1", "RUNNING"]
    described = ctl.ok("describe", "connector", "lifecycle")
    assert f"Worker:  {address}" in described
    assert ["output.path", str(tmp_path / "out")] in [
        line.split() for line in described.splitlines()
    ]
    assert any(line.split()[:3] == ["0", "RUNNING", address] for line in described.splitlines())

    body = {"name": "lifecycle", "config": {**config, "rows.per.second": "7"}}
    assert ctl.ok("apply", "-f", "-", stdin=json.dumps(body)) == "connector lifecycle configured\n"
    assert ctl.json("describe", "connector", "lifecycle")["config"]["rows.per.second"] == "7"

    assert ctl.ok("pause", "connector", "lifecycle") == "connector lifecycle paused\n"
    ctl.wait_states("lifecycle", "PAUSED", ["PAUSED"])
    assert ctl.ok("resume", "connector", "lifecycle") == "connector lifecycle resumed\n"
    ctl.wait_states("lifecycle", "RUNNING", ["RUNNING"])

    assert ctl.ok("restart", "connector", "lifecycle") == "connector lifecycle restarted\n"
    nothing = ctl.ok("restart", "connector", "lifecycle", "--include-tasks", "--only-failed")
    assert nothing == "connector lifecycle: nothing to restart\n"
    everything = ctl.ok("restart", "connector", "lifecycle", "--include-tasks")
    assert everything == "connector lifecycle: restarting the connector and task 0\n"
    ctl.wait_states("lifecycle", "RUNNING", ["RUNNING"])
    wait_until(
        lambda: ctl.json("get", "offsets", "lifecycle")["offsets"],
        TIMEOUT_S,
        what="a committed batch",
    )

    assert ctl.ok("stop", "connector", "lifecycle") == "connector lifecycle stopped\n"
    ctl.wait_states("lifecycle", "STOPPED", [])
    table = ctl.ok("get", "offsets", "lifecycle").splitlines()
    assert table[0].split() == ["PARTITION", "OFFSET"]
    assert table[1].startswith('{"source":0,"task":0}')
    offsets = ctl.json("get", "offsets", "lifecycle")
    offsets["offsets"][0]["offset"]["offset"] = 1000
    altered = tmp_path / "offsets.json"
    altered.write_text(json.dumps(offsets))
    patched = once_tasks_stopped(ctl, "patch", "offsets", "lifecycle", "-f", str(altered))
    assert (
        patched
        == "connector lifecycle: The offsets for this connector have been altered successfully\n"
    )
    [shown] = ctl.json("get", "offsets", "lifecycle")["offsets"]
    assert shown["offset"]["offset"] == 1000

    reset = ctl.ok("reset", "offsets", "lifecycle")
    assert (
        reset
        == "connector lifecycle: The offsets for this connector have been reset successfully\n"
    )
    assert ctl.ok("get", "offsets", "lifecycle") == "connector lifecycle has no offsets\n"

    assert ctl.ok("delete", "connector", "lifecycle") == "connector lifecycle deleted\n"
    assert "lifecycle" not in ctl.json("get", "connectors")
    assert "not found" in ctl.fails("describe", "connector", "lifecycle")


def once_tasks_stopped(ctl: Ctl, *argv: str) -> str:
    """Offsets change only once no task reports RUNNING: 409 until then."""

    def attempt() -> subprocess.CompletedProcess[str] | None:
        done = ctl.run(*argv)
        return None if "(HTTP 409)" in done.stderr else done

    done = wait_until(attempt, TIMEOUT_S, what=f"ctl {' '.join(argv)} without 409")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_apply_honours_initial_state_for_a_new_connector(ctl: Ctl, tmp_path: Path) -> None:
    body = {
        "name": "born-stopped",
        "config": generator_config(tmp_path / "out", 1),
        "initial_state": "STOPPED",
    }
    manifest = tmp_path / "anything.json"
    manifest.write_text(json.dumps(body))
    assert ctl.ok("apply", "-f", str(manifest)) == "connector born-stopped created\n"
    ctl.wait_states("born-stopped", "STOPPED", [])
    assert ctl.ok("apply", "-f", str(manifest)) == "connector born-stopped configured\n"
    ctl.ok("delete", "connector", "born-stopped")


@pytest.mark.parametrize(
    "argv",
    [
        ["describe", "connector", "ghost"],
        ["delete", "connector", "ghost"],
        ["restart", "connector", "ghost", "--include-tasks"],
        ["pause", "connector", "ghost"],
        ["resume", "connector", "ghost"],
        ["stop", "connector", "ghost"],
        ["get", "offsets", "ghost"],
        ["reset", "offsets", "ghost"],
    ],
)
def test_an_unknown_connector_prints_the_servers_404(ctl: Ctl, argv: list[str]) -> None:
    message = ctl.fails(*argv)
    assert "ghost" in message and message.endswith("(HTTP 404)")


def test_an_invalid_config_prints_the_servers_400(ctl: Ctl, tmp_path: Path) -> None:
    config = {**generator_config(tmp_path / "out", 1), "rows.per.second": "fast"}
    manifest = tmp_path / "invalid.json"
    manifest.write_text(json.dumps(config))
    message = ctl.fails("apply", "-f", str(manifest))
    assert "rows.per.second" in message and "'fast'" in message
    assert message.endswith("(HTTP 400)")
    assert "invalid" not in ctl.json("get", "connectors")


def test_a_config_without_connector_class_is_refused_as_such(ctl: Ctl, tmp_path: Path) -> None:
    manifest = tmp_path / "classless.properties"
    manifest.write_text(f"tasks.max=1\noutput.path={tmp_path / 'out'}\n")
    message = ctl.fails("apply", "-f", str(manifest))
    assert message.startswith("connector.class is required")
    assert message.endswith("(HTTP 400)")


def test_authentication_tls_and_an_unreachable_worker(ctl: Ctl, tmp_path: Path) -> None:
    anonymous = ctl.env(SPARKHERD_USER=None, SPARKHERD_PASSWORD=None)
    message = ctl.fails("get", "connectors", env=anonymous)
    assert message == (
        "basic authentication required: missing or invalid credentials (HTTP 401); "
        "set SPARKHERD_USER and SPARKHERD_PASSWORD"
    )
    wrong = ctl.env(SPARKHERD_PASSWORD="guess")
    assert ctl.fails("get", "workers", env=wrong).endswith(
        "check SPARKHERD_USER and SPARKHERD_PASSWORD"
    )

    untrusting = ctl.env(SPARKHERD_CACERT=None)
    assert "is not trusted" in ctl.fails("get", "connectors", env=untrusting)
    flag = ctl.run("get", "plugins", "--cacert", str(ctl.cacert), env=untrusting)
    assert flag.returncode == 0, flag.stderr

    plain = f"http://127.0.0.1:{ctl.worker.rest_port}"
    message = ctl.fails("get", "connectors", env=ctl.env(SPARKHERD_URL=plain))
    assert message.startswith(f"no valid answer from the worker at {plain}: ")

    nowhere = f"http://127.0.0.1:{free_port()}"
    message = ctl.fails("get", "connectors", "--url", nowhere)
    assert message.startswith(f"cannot reach a worker at {nowhere}: ")

    assert ctl.fails("apply", "-f", str(tmp_path / "missing.json"), code=2).startswith(
        "cannot read"
    )
