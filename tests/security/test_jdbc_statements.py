"""A `jdbc-to-kafka`'s statements end with its task (issue 42, item 5), against a real
worker, a real broker and a real PostgreSQL.

The probe: a `query` holding `pg_sleep(3600)` was still running 55 s after its connector
was deleted, and after its worker was killed: PostgreSQL notices a client gone only when
it next writes to it, and no statement had a time-out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import free_port, ready_worker
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

WAIT_S = 120.0
GONE_WITHIN_S = 30.0
"""How soon a statement must end once its task is gone: the server looks for its client
every second; the rest is the task's stop (half of `task.shutdown.graceful.timeout.ms`
for a batch in flight) and a loaded machine."""


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("statements")
    with ready_worker("statements", broker.bootstrap_servers, root, timeout_s=WAIT_S) as process:
        yield Api(process.url, WAIT_S)


@pytest.fixture(scope="module")
def naps(postgres: PostgresServer) -> PostgresServer:
    postgres.execute("CREATE TABLE IF NOT EXISTS naps (id bigint PRIMARY KEY)")
    postgres.execute("INSERT INTO naps VALUES (1) ON CONFLICT DO NOTHING")
    return postgres


def sleeping_source(
    postgres: PostgresServer, broker: EmbeddedBroker, marker: str, **settings: str
) -> dict[str, str]:
    """A source whose every poll sleeps an hour; `marker` finds its statement."""
    return {
        "connector.class": "jdbc-to-kafka",
        **postgres.connection_config(),
        "query": f"SELECT id FROM naps WHERE pg_sleep(3600) IS NOT NULL AND '{marker}' <> ''",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "topic.prefix": f"{marker}-{free_port()}",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "poll.interval.ms": "300",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "-1",
        **{key.replace("_", "."): value for key, value in settings.items()},
    }


def sleeping(postgres: PostgresServer, marker: str) -> list[int]:
    """The server processes running a statement of the source `marker` names."""
    rows = postgres.execute(
        "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() "
        "AND query LIKE %s",
        [f"%pg_sleep(3600)%'{marker}'%"],
    )
    return [int(row[0]) for row in rows]


def asleep(postgres: PostgresServer, marker: str) -> None:
    wait_until(lambda: sleeping(postgres, marker), WAIT_S, what=f"{marker}'s poll to sleep")


def awake(postgres: PostgresServer, marker: str) -> None:
    wait_until(
        lambda: not sleeping(postgres, marker),
        GONE_WITHIN_S,
        what=f"{marker}'s statement to end",
    )


def test_a_deleted_connector_s_statement_ends(
    worker: Api, naps: PostgresServer, broker: EmbeddedBroker
) -> None:
    config = sleeping_source(naps, broker, "deleted")
    worker.call("POST", "/connectors", 201, json={"name": "deleted", "config": config})
    asleep(naps, "deleted")

    worker.call("DELETE", "/connectors/deleted", 204)

    awake(naps, "deleted")


def test_a_killed_worker_s_statement_ends(
    naps: PostgresServer, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    with ready_worker("doomed", broker.bootstrap_servers, tmp_path, timeout_s=WAIT_S) as doomed:
        config = sleeping_source(naps, broker, "killed")
        Api(doomed.url).call("POST", "/connectors", 201, json={"name": "k", "config": config})
        asleep(naps, "killed")

        doomed.kill()

        awake(naps, "killed")


def test_a_poll_longer_than_query_timeout_fails_its_task_naming_the_key(
    worker: Api, naps: PostgresServer, broker: EmbeddedBroker
) -> None:
    config = sleeping_source(naps, broker, "timed", query_timeout_ms="2000")
    worker.call("POST", "/connectors", 201, json={"name": "timed", "config": config})

    status = wait_until(
        lambda: worker.status("timed"),
        WAIT_S,
        what="the timed task to fail",
        until=lambda s: bool(s["tasks"]) and s["tasks"][0]["state"] == "FAILED",
    )
    trace = status["tasks"][0]["trace"]
    assert "statement timeout" in trace and "query.timeout.ms=2000" in trace
    assert naps.password not in trace
    worker.call("DELETE", "/connectors/timed", 204)
    awake(naps, "timed")
