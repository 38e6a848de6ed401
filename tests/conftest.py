"""Shared fixtures: real brokers, one of each kind per test session.

`broker` is Apache Kafka (KRaft), what users run; `tansu_broker` is the embedded
default, for the smoke set that keeps it proven: a module in that set defines
`broker` as `each_broker`, which runs each of its tests on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.postgres import PostgresServer, running_postgres
from tests.support.processes import running_broker

# Property tests assert what happens, never how fast: hypothesis' default 200 ms deadline
# per example turned a loaded machine into failures (test_task_progress, parallel unit
# runs at load 50).
settings.register_profile("sparkherd", deadline=None)
settings.load_profile("sparkherd")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules marked `long` first, in their order, then the rest in theirs.
    pytest-xdist deals out whole modules (`--dist loadfile`, without its reordering by
    number of tests) as its processes run short of work: a long module dealt out last
    left one process running it alone for a minute and more."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with running_broker(tmp_path_factory.mktemp("kafka"), "kafka") as started:
        yield started


@pytest.fixture(scope="session")
def broker(kafka_broker: EmbeddedBroker) -> EmbeddedBroker:
    """The broker of a test that does not say: Apache Kafka. A smoke-set module
    overrides it with `each_broker`."""
    return kafka_broker


@pytest.fixture(scope="session")
def tansu_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with running_broker(tmp_path_factory.mktemp("tansu"), "tansu") as started:
        yield started


@pytest.fixture(params=["kafka", "tansu"])
def each_broker(request: pytest.FixtureRequest) -> EmbeddedBroker:
    """The smoke set: the test runs on Apache Kafka and again on Tansu."""
    name = "kafka_broker" if request.param == "kafka" else "tansu_broker"
    chosen: EmbeddedBroker = request.getfixturevalue(name)
    return chosen


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A throw-away PostgreSQL 15 server per test module (a user and a database with a
    password), stopped when the module is done."""
    with running_postgres() as server:
        yield server


@pytest.fixture
def logs_dir(tmp_path: Path) -> Path:
    path = tmp_path / "logs"
    path.mkdir()
    return path
