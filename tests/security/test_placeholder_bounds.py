"""Placeholders bound as Kafka Connect binds them (KIP-993's `allowed.paths`), against a
real worker: a path that is relative, or that holds a NUL character, is a 400 on create
and an error on its key in `/config/validate`, naming the key, never a value.

Connect's `AllowedPaths` takes only a path that, normalised, starts with an allowed
directory, so a relative path never passes; read against the worker's working directory
it would name a different file from one worker to the next. A NUL character ends a path
for the operating system, so no file has such a name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config
from tests.support.processes import WorkerProcess, ready_worker

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

SECRET = "7"


@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bounds") / "secrets"
    directory.mkdir()
    (directory / "rates.properties").write_text(f"rate={SECRET}\n")
    (directory / "rate").write_text(SECRET)
    return directory


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, secrets: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    settings = [
        "worker.warmup.enabled=false",
        "config.providers=file,dir",
        "config.providers.file.class=file",
        f"config.providers.file.param.allowed.paths={secrets}",
        "config.providers.dir.class=directory",
        f"config.providers.dir.param.allowed.paths={secrets}",
    ]
    root = tmp_path_factory.mktemp("bounds-worker")
    with ready_worker("bounds", broker.bootstrap_servers, root, settings) as started:
        yield started


def relative(path: Path) -> str:
    """`path` relative to the working directory the worker inherits from this test."""
    return os.path.relpath(path, Path.cwd())


@pytest.mark.parametrize(
    "placeholder",
    [
        "${file:RELATIVE/rates.properties:rate}",
        "${dir:RELATIVE:rate}",
        "${file:SECRETS/rates.properties\0:rate}",
        "${dir:SECRETS\0:rate}",
    ],
)
def test_a_relative_or_nul_path_is_a_400_naming_the_key(
    worker: WorkerProcess, secrets: Path, tmp_path: Path, placeholder: str
) -> None:
    value = placeholder.replace("RELATIVE", relative(secrets)).replace("SECRETS", str(secrets))
    config = {**generator_config(tmp_path, 1), "rows.per.second": value}
    created = httpx.post(
        f"{worker.url}/connectors", json={"name": tmp_path.name, "config": config}, timeout=60
    )
    if created.status_code == 201:
        httpx.delete(f"{worker.url}/connectors/{tmp_path.name}", timeout=60)
    assert created.status_code == 400, created.text
    message = created.json()["message"]
    assert f"rows.per.second: cannot resolve {value}" in message, message
    validated = httpx.put(
        f"{worker.url}/connector-plugins/generator/config/validate", json=config, timeout=60
    )
    assert validated.status_code == 200, validated.text
    [entry] = [
        c for c in validated.json()["configs"] if c["definition"]["name"] == "rows.per.second"
    ]
    assert any("cannot resolve" in error for error in entry["value"]["errors"]), entry
