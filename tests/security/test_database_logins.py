"""What a connector's database login gives a server a REST caller names, against a real
worker, Apache Kafka, a real PostgreSQL and an attacker's server that asks for the
password in clear text.

The worker runs with PostgreSQL credentials in its environment (`PGPASSWORD`,
`PGPASSFILE`, a `~/.pgpass` through `HOME`), all holding the real server's password, as
a worker that once ran `psql` might. No connector may send that password anywhere nor
answer a clear-text password request from a server that is not verified: libpq's
(`jdbc-to-kafka`, `kafka-to-jdbc`) and the JVM driver's (`kafka-to-iceberg`'s jdbc
catalog) alike: a PostgreSQL that asks TLS clients for the password in clear text gets
it when the connector verifies it (`sslmode=verify-full`) and not otherwise. And
`iceberg.catalog.uri` takes only what `connection.url` takes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cleartext_password_server import CleartextPasswordServer
from tests.support.kafka_topics import new_topic, produce, read_topic
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer, running_postgres
from tests.support.processes import WorkerProcess, ready_worker
from tests.support.tls_postgres import serve_tls_with_clear_text_passwords
from worker.kafka.client import Outgoing, Record

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 180
CONNECTOR_PASSWORD = "connector-pw-never-in-clear"
LIBPQ_REFUSAL = 'authentication method requirement "!password,!gss,!sspi" failed'
PGJDBC_REFUSAL = "Authentication method is not allowed by requireAuth"


def records(broker: EmbeddedBroker, topic: str) -> list[Record]:
    try:
        return read_topic(broker.bootstrap_servers, topic, "read_committed")
    except Exception:  # the task has not created the topic yet
        return []


@dataclass
class Setting:
    """The worker under test, the servers it is pointed at, and a topic with records."""

    worker: WorkerProcess
    broker: EmbeddedBroker
    postgres: PostgresServer
    fake: CleartextPasswordServer
    root: Path
    topic: str

    def call(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        return httpx.request(method, f"{self.worker.url}{path}", timeout=60, **kwargs)  # type: ignore[arg-type]

    def create(self, name: str, config: dict[str, str]) -> httpx.Response:
        return self.call("POST", "/connectors", json={"name": name, "config": config})

    def failed_trace(self, name: str) -> str:
        def trace() -> str | None:
            [task] = self.call("GET", f"/connectors/{name}/status").json()["tasks"]
            return str(task.get("trace", "")) if task["state"] == "FAILED" else None

        found: str = wait_until(trace, TIMEOUT_S, what=f"{name}'s task to fail")
        return found

    def connectors(
        self, url: str, user: str, password: str | None, prefix: str | None = None
    ) -> dict[str, dict[str, str]]:
        """A `jdbc-to-kafka`, a `kafka-to-jdbc` and a `kafka-to-iceberg` with a jdbc
        catalog, each at `url` as `user`, named `<prefix>-source|sink|lake` (`prefix`:
        the user by default)."""
        prefix = prefix or user
        login = {"connection.url": url, "connection.user": user}
        if password is not None:
            login["connection.password"] = password
        catalog = {
            "iceberg.catalog.type": "jdbc",
            "iceberg.catalog.uri": url,
            "iceberg.catalog.jdbc.user": user,
            "iceberg.catalog.warehouse": str(self.root / f"{prefix}-lake"),
            "iceberg.tables": "shop.orders",
        }
        if password is not None:
            catalog["iceberg.catalog.jdbc.password"] = password
        kafka = {"kafka.bootstrap.servers": self.broker.bootstrap_servers}
        return {
            f"{prefix}-source": {
                "connector.class": "jdbc-to-kafka",
                **login,
                **kafka,
                "table.whitelist": "orders",
                "mode": "incrementing",
                "incrementing.column.name": "id",
                "topic.prefix": f"{prefix}-",
                "topic.creation.default.partitions": "1",
                "topic.creation.default.replication.factor": "-1",
                "connection.attempts": "1",
            },
            f"{prefix}-sink": {
                "connector.class": "kafka-to-jdbc",
                **login,
                **kafka,
                "topics": self.topic,
                "key.converter": "string",
                "value.converter": "json",
                "value.converter.schemas.enable": "false",
                "value.schema": "id LONG, item STRING",
                "auto.create": "true",
            },
            f"{prefix}-lake": {
                "connector.class": "kafka-to-iceberg",
                **catalog,
                **kafka,
                "topics": self.topic,
                "kafka.client": "jvm",
            },
        }


@pytest.fixture(scope="module")
def setting(
    broker: EmbeddedBroker, postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setting]:
    root = tmp_path_factory.mktemp("logins")
    home = root / "home"
    home.mkdir()
    line = f"*:*:*:*:{postgres.password}\n"
    for passfile in (home / ".pgpass", root / "passfile"):
        passfile.write_text(line)
        passfile.chmod(0o600)
    postgres.execute("CREATE TABLE orders (id INT PRIMARY KEY, item TEXT)")
    topic = new_topic(broker.bootstrap_servers, "logins", 1)
    produce(
        broker.bootstrap_servers,
        topic,
        [Outgoing(f"{n}".encode(), json.dumps({"id": n, "item": "x"}).encode()) for n in range(3)],
    )
    environment = {
        "PGPASSWORD": postgres.password,
        "PGPASSFILE": str(root / "passfile"),
        "HOME": str(home),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
    }
    with (
        CleartextPasswordServer().running() as fake,
        ready_worker(
            "logins", broker.bootstrap_servers, root, environment=environment, timeout_s=TIMEOUT_S
        ) as worker,
    ):
        yield Setting(worker, broker, postgres, fake, root, topic)
        log = worker.log_text()
    assert CONNECTOR_PASSWORD not in log and postgres.password not in log


def test_no_password_in_clear_to_a_server_that_is_not_verified(setting: Setting) -> None:
    """The server asks for the password in clear text; no connector answers, each task
    fails saying why, and the server received startup messages but no password."""
    connectors = setting.connectors(setting.fake.jdbc_url(), "victim", CONNECTOR_PASSWORD)
    for name, config in connectors.items():
        answer = setting.create(name, config)
        assert answer.status_code == 201, answer.text
    try:
        traces = {name: setting.failed_trace(name) for name in connectors}
        assert LIBPQ_REFUSAL in traces["victim-source"], traces["victim-source"][:2000]
        assert LIBPQ_REFUSAL in traces["victim-sink"], traces["victim-sink"][:2000]
        assert PGJDBC_REFUSAL in traces["victim-lake"], traces["victim-lake"][:2000]
        for trace in traces.values():
            assert CONNECTOR_PASSWORD not in trace
        assert setting.fake.passwords() == []
        assert {startup.get("user") for startup in setting.fake.startups()} == {"victim"}
    finally:
        for name in connectors:
            setting.call("DELETE", f"/connectors/{name}")


def test_no_login_with_the_worker_s_own_postgresql_credentials(setting: Setting) -> None:
    """Without `connection.password` the real server's request for one goes unanswered:
    not `PGPASSWORD`, not `PGPASSFILE`, not `~/.pgpass`, for either driver."""
    postgres = setting.postgres
    connectors = setting.connectors(postgres.jdbc_url, postgres.user, None)
    for name, config in connectors.items():
        answer = setting.create(name, config)
        assert answer.status_code == 201, answer.text
    try:
        traces = {name: setting.failed_trace(name) for name in connectors}
        source, sink = traces[f"{postgres.user}-source"], traces[f"{postgres.user}-sink"]
        assert "no password supplied" in source, source[:2000]
        assert "no password supplied" in sink, sink[:2000]
        lake = traces[f"{postgres.user}-lake"]
        assert "SCRAM-based authentication, but the password is an empty string" in lake, lake[
            :2000
        ]
    finally:
        for name in connectors:
            setting.call("DELETE", f"/connectors/{name}")


@pytest.mark.parametrize(
    "parameters",
    [
        "loggerFile=/tmp/sparkherd-catalog.log",
        "loggerLevel=TRACE",
        "socketTimeout=0",
        "requireAuth=password",
        "gssEncMode=require",
        "service=other",
        "sslcert=/root/.postgresql/postgresql.crt",
    ],
)
def test_the_catalog_uri_takes_what_connection_url_takes(setting: Setting, parameters: str) -> None:
    uri = f"{setting.postgres.jdbc_url}?{parameters}"
    [config] = [c for n, c in setting.connectors(uri, "u", "pw").items() if n.endswith("-lake")]
    answer = setting.create("catalog-uri", config)
    if answer.status_code == 201:
        setting.call("DELETE", "/connectors/catalog-uri")
    assert answer.status_code == 400, answer.text
    message = answer.json()["message"]
    assert "iceberg.catalog.uri" in message and parameters.split("=")[0] in message, message
    validated = setting.call(
        "PUT", "/connector-plugins/kafka-to-iceberg/config/validate", json=config
    ).json()
    [entry] = [c for c in validated["configs"] if c["value"]["name"] == "iceberg.catalog.uri"]
    assert entry["value"]["errors"], validated
    assert not Path("/tmp/sparkherd-catalog.log").exists()


@pytest.fixture(scope="module")
def tls_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PostgresServer, Path]]:
    """A PostgreSQL that asks TLS clients for the password in clear text, and its CA."""
    with running_postgres() as server:
        ca = serve_tls_with_clear_text_passwords(server, tmp_path_factory.mktemp("pg-ca"))
        server.execute("CREATE TABLE orders (id INT PRIMARY KEY, item TEXT)")
        server.execute("INSERT INTO orders SELECT g, 'item-' || g FROM generate_series(1, 3) g")
        yield server, ca


def test_a_clear_text_password_goes_to_a_verified_server_only(
    setting: Setting, tls_postgres: tuple[PostgresServer, Path]
) -> None:
    """Over TLS with the server verified (`sslmode=verify-full`) each connector answers
    the request and works; over TLS without (`sslmode=require`) none does."""
    server, ca = tls_postgres
    verified = setting.connectors(
        f"{server.jdbc_url}?sslmode=verify-full&sslrootcert={ca}",
        server.user,
        server.password,
        "verified",
    )
    unverified = setting.connectors(
        f"{server.jdbc_url}?sslmode=require&sslrootcert={ca}",
        server.user,
        server.password,
        "unverified",
    )
    for name, config in {**verified, **unverified}.items():
        answer = setting.create(name, config)
        assert answer.status_code == 201, answer.text

    def work_done() -> dict[str, object]:
        """What each verified connector did, which it could not have done unless logged in."""
        sink_table = f'"{setting.topic}"'
        return {
            "source": len(records(setting.broker, "verified-orders")) == 3,
            "sink": server.execute("SELECT to_regclass(%s)", [sink_table])[0][0] is not None,
            "lake": server.execute("SELECT to_regclass('iceberg_tables')")[0][0] is not None,
            "states": {
                name: setting.call("GET", f"/connectors/{name}/status").json()["tasks"]
                for name in verified
            },
        }

    try:
        traces = {name: setting.failed_trace(name) for name in unverified}
        assert LIBPQ_REFUSAL in traces["unverified-source"], traces["unverified-source"][:2000]
        assert LIBPQ_REFUSAL in traces["unverified-sink"], traces["unverified-sink"][:2000]
        assert PGJDBC_REFUSAL in traces["unverified-lake"], traces["unverified-lake"][:2000]
        wait_until(
            work_done,
            TIMEOUT_S,
            what="the verified connectors to log in and work",
            until=lambda done: all(done[key] for key in ("source", "sink", "lake")),
        )
    finally:
        for name in {**verified, **unverified}:
            setting.call("DELETE", f"/connectors/{name}")
