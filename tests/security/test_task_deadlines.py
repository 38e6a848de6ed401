"""Task starts that never end, against real workers and a real broker (issue 42, item 2).

The probe: a `jdbc-to-kafka` naming an address that accepts connections and never
answers, with `connection.attempts=2147483647`, sat in its start; deleted, it held the
rebalance that revoked it, the next connector stayed UNASSIGNED for good and `/health`
said healthy. The same stall was reported from `kafka-to-files`' JSON type inference over
a topic holding one 1.26 MB record. The address here is the attacker's: a socket that
accepts and says nothing."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config
from tests.support.polling import wait_until
from tests.support.processes import free_port, ready_worker
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

WAIT_S = 120.0
START_TIMEOUT_MS = 10_000
BIG_RECORD_BYTES = 1_260_000


class SilentServer:
    """Accepts every connection and never sends a byte: an address that never answers."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self._socket.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture(scope="module")
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """A worker with the default settings."""
    root = tmp_path_factory.mktemp("deadlines")
    with ready_worker("deadlines", broker.bootstrap_servers, root, timeout_s=WAIT_S) as process:
        yield Api(process.url, WAIT_S)


@pytest.fixture(scope="module")
def hasty_worker(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("hasty")
    settings = [f"task.start.timeout.ms={START_TIMEOUT_MS}"]
    with ready_worker(
        "hasty", broker.bootstrap_servers, root, settings, timeout_s=WAIT_S
    ) as process:
        yield Api(process.url, WAIT_S)


def silent_source(silent: SilentServer, broker: EmbeddedBroker, **settings: str) -> dict[str, str]:
    """A `jdbc-to-kafka` whose database never answers, retried as long as it may be."""
    return {
        "connector.class": "jdbc-to-kafka",
        "connection.url": f"jdbc:postgresql://127.0.0.1:{silent.port}/shop",
        "connection.user": "reader",
        "connection.password": "never-sent",
        "table.whitelist": "orders",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "topic.prefix": f"silent-{free_port()}-",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "connection.attempts": "100",
        "connection.backoff.ms": "60000",
        **{key.replace("_", "."): value for key, value in settings.items()},
    }


def create(api: Api, name: str, config: dict[str, str], expect: int = 201) -> httpx.Response:
    return api.call("POST", "/connectors", expect, json={"name": name, "config": config})


def healthy(api: Api) -> None:
    answer = httpx.get(f"{api.url}/health", timeout=30)
    assert answer.status_code == 200, answer.text


def task_trace(api: Api, name: str) -> str:
    """The connector's first task's trace once it is FAILED (else waits for that)."""
    status = wait_until(
        lambda: api.status(name),
        WAIT_S,
        what=f"{name}'s task to fail",
        until=lambda s: bool(s["tasks"]) and s["tasks"][0]["state"] == "FAILED",
    )
    trace: str = status["tasks"][0]["trace"]
    return trace


@pytest.mark.parametrize(
    ("key", "value"),
    [("connection.attempts", "2147483647"), ("connection.backoff.ms", "2147483647")],
)
def test_retry_settings_past_their_bounds_are_refused(
    worker: Api, silent: SilentServer, broker: EmbeddedBroker, key: str, value: str
) -> None:
    config = {**silent_source(silent, broker), key: value}
    answer = create(worker, f"unbounded-{key.replace('.', '-')}", config, expect=400)
    assert key in answer.json()["message"]


def test_a_delete_during_a_start_that_never_ends_lets_the_next_connector_run(
    worker: Api, silent: SilentServer, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    before = len(silent.accepted)
    create(worker, "stuck", silent_source(silent, broker))
    wait_until(lambda: len(silent.accepted) > before, WAIT_S, what="the start to connect")

    worker.call("DELETE", "/connectors/stuck", 204)
    create(worker, "next", generator_config(tmp_path / "next-out", 1))

    worker.wait_states("next", "RUNNING", ["RUNNING"])
    healthy(worker)


def test_a_start_past_task_start_timeout_fails_naming_it_and_the_worker_carries_on(
    hasty_worker: Api, silent: SilentServer, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    create(hasty_worker, "slow", silent_source(silent, broker))

    trace = task_trace(hasty_worker, "slow")
    assert f"task.start.timeout.ms ({START_TIMEOUT_MS} ms)" in trace
    assert "cancelled" in trace and "never-sent" not in trace
    create(hasty_worker, "after-slow", generator_config(tmp_path / "after-out", 1))
    hasty_worker.wait_states("after-slow", "RUNNING", ["RUNNING"])
    healthy(hasty_worker)


def test_a_record_too_large_to_sample_fails_json_inference_saying_so(
    worker: Api, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = f"one-big-record-{free_port()}"
    asyncio.run(one_big_record(broker.bootstrap_servers, topic))
    config = {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(tmp_path / "big-out"),
        "key.converter": "bytes",
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "transform.sql": "SELECT value FROM source",
    }
    create(worker, "big", config)

    trace = task_trace(worker, "big")
    assert "larger than 1048576 bytes" in trace and "value.schema" in trace
    healthy(worker)
    worker.call("DELETE", "/connectors/big", 204)


async def one_big_record(bootstrap_servers: str, topic: str) -> None:
    """A topic that takes records of a few MB, holding one JSON value of 1.26 MB."""
    sized: dict[str, Any] = {"max.message.bytes": str(4 << 20)}
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1, topic_configs=sized)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap_servers, max_request_size=4 << 20)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b'{"text": "' + b"x" * BIG_RECORD_BYTES + b'"}')
    finally:
        await producer.stop()
