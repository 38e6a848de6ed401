"""Shared fixtures: one real broker per test session for the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import running_broker
from worker.embedded_broker import EmbeddedBroker


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with running_broker(tmp_path_factory.mktemp("broker")) as started:
        yield started


@pytest.fixture
def logs_dir(tmp_path: Path) -> Path:
    path = tmp_path / "logs"
    path.mkdir()
    return path
