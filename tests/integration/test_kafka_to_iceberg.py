"""`kafka-to-iceberg` on a real worker, Apache Kafka, PostgreSQL and Spark, every table
read back with pyiceberg (not Spark): each record lands once with the hadoop catalog
(across a SIGKILL of the worker mid-batch and its restart) and with the jdbc catalog
(two tasks committing one table; an offsets reset writes the records again), a new
column fails the task or is added as asked, and each bad catalog or table setting fails
its task with a clear trace while the worker runs on. One worker serves the module
(restarted once, by the kill)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.kafka_topics import keyed, new_topic, produce
from tests.support.lakehouse import iceberg_hadoop_table
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import WorkerProcess, free_port
from tests.support.rest_client import Api
from worker.plugins.api import HIDDEN
from worker.plugins.checkpoint_layout import checkpoint_dir_for

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

SECRET_VARIABLE = "CONNECTOR_SECRET_PG_PASSWORD"
PLACEHOLDER = "${env:" + SECRET_VARIABLE + "}"
WRONG_PASSWORD = "wrong-pw-7391"


@dataclass
class Lake:
    """The module's worker, its broker, and where its tables and checkpoints live."""

    broker: EmbeddedBroker
    root: Path
    postgres: PostgresServer
    group: str
    worker: WorkerProcess | None = None
    starts: int = 0

    def start(self) -> None:
        self.starts += 1
        self.worker = WorkerProcess(
            f"lake-{self.starts}",
            self.broker.bootstrap_servers,
            self.root / "checkpoints",
            self.root,
            [
                f"group.id={self.group}",
                "scheduled.rebalance.max.delay.ms=2000",
                "config.providers=env",
                "config.providers.env.class=env",
                "config.providers.env.param.allowlist.pattern=CONNECTOR_SECRET_.*",
            ],
            environment={SECRET_VARIABLE: self.postgres.password},
        ).start()
        self.worker.wait_ready(120)

    @property
    def api(self) -> Api:
        assert self.worker is not None
        return Api(self.worker.url)

    def kill(self) -> None:
        assert self.worker is not None
        self.worker.signal_every_process(signal.SIGKILL)
        self.worker.kill()

    def config(self, topic: str, **keys: str) -> dict[str, str]:
        return {
            "connector.class": "kafka-to-iceberg",
            "kafka.bootstrap.servers": self.broker.bootstrap_servers,
            "topics": topic,
            "kafka.client": "jvm",
            "trigger.interval.ms": "300",
            "iceberg.catalog.type": "hadoop",
            **keys,
        }

    def put(self, name: str, config: dict[str, str], expect: int = 201) -> None:
        self.api.call("PUT", f"/connectors/{name}/config", expect, json=config)

    def hadoop_sink(
        self, name: str, table: str, partitions: int, records: int, **keys: str
    ) -> tuple[str, Path]:
        """Connector `name` writing a new topic of `records` keyed records into `table` of
        a hadoop catalog of its own; the topic and the warehouse."""
        topic = new_topic(self.broker.bootstrap_servers, name, partitions)
        warehouse = self.root / f"{name}-lake"
        produce(self.broker.bootstrap_servers, topic, keyed(range(records)))
        catalog = {"iceberg.tables": table, "iceberg.catalog.warehouse": str(warehouse)}
        self.put(name, self.config(topic, **catalog, **keys))
        return topic, warehouse

    def trace(self, name: str) -> str:
        """The failed task's trace; a task that does not fail in time fails the test with
        the worker's lines about it (a CI run once saw one RUNNING for two minutes)."""
        try:
            status = self.api.wait_states(name, "RUNNING", ["FAILED"])
        except AssertionError as timeout:
            assert self.worker is not None
            about = [line for line in self.worker.log_text().splitlines() if name in line]
            raise AssertionError("\n".join([str(timeout), *about[-40:]])) from None
        trace: str = status["tasks"][0]["trace"]
        return trace


@pytest.fixture(scope="module")
def lake(
    broker: EmbeddedBroker, postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Lake]:
    started = Lake(broker, tmp_path_factory.mktemp("iceberg"), postgres, f"lake-{free_port()}")
    try:
        started.start()
        yield started
    finally:
        if started.worker is not None:
            started.worker.kill()


def rows_of(table: Table | None) -> pa.Table | None:
    return None if table is None else table.scan().to_arrow()


def row_count(table: Table | None) -> int:
    rows = rows_of(table)
    return 0 if rows is None else rows.num_rows


def assert_each_record_once(rows: pa.Table, count: int) -> None:
    keys = rows.column("key").to_pylist()
    assert sorted(keys) == sorted(f"key-{n}" for n in range(count)), "a record lost or doubled"
    places = set(
        zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist(), strict=True)
    )
    assert len(places) == count


def committed_batches(table: Table) -> dict[str, list[int]]:
    """Batch ids by app id, from the snapshots' summaries."""
    found: dict[str, list[int]] = {}
    for snapshot in table.metadata.snapshots:
        summary: Any = snapshot.summary
        app = summary.get("sparkherd.app-id") if summary is not None else None
        if app is not None:
            found.setdefault(app, []).append(int(summary["sparkherd.batch-id"]))
    return found


def test_hadoop_catalog_every_record_once_across_a_kill_mid_batch(lake: Lake) -> None:
    topic, warehouse = lake.hadoop_sink(
        "orders-hadoop", "shop.orders", 1, 300, **{"trigger.interval.ms": "100"}
    )
    wait_until(
        lambda: row_count(iceberg_hadoop_table(warehouse, "shop.orders")),
        120,
        what="the first wave",
        until=lambda n: n >= 300,
    )

    # Kill as soon as a new snapshot is written: Spark records the batch in the
    # checkpoint only after the commit returns, so the batch may run again.
    metadata = warehouse / "shop" / "orders" / "metadata"
    before = len(list(metadata.glob("v*.metadata.json")))
    produce(lake.broker.bootstrap_servers, topic, keyed(range(300, 600)))
    wait_until(
        lambda: len(list(metadata.glob("v*.metadata.json"))),
        60,
        what="a new snapshot",
        until=lambda n: n > before,
        interval_s=0.005,
    )
    lake.kill()
    commits = checkpoint_dir_for(lake.root / "checkpoints", "orders-hadoop", 0) / "commits"
    in_checkpoint = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    table = iceberg_hadoop_table(warehouse, "shop.orders")
    assert table is not None
    in_table = max(max(ids) for ids in committed_batches(table).values())
    print(f"at the kill: batch {in_table} in the table, batch {in_checkpoint} in the checkpoint")
    if in_table == in_checkpoint:
        # The kill missed the moment between the two: make the state it leaves, batch
        # N in the table but not recorded done, and no batch planned after it.
        offsets = commits.parent / "offsets"
        for log, batch in ((commits, in_table), (offsets, in_table + 1)):
            for name in (str(batch), f".{batch}.crc"):
                (log / name).unlink(missing_ok=True)

    lake.start()
    produce(lake.broker.bootstrap_servers, topic, keyed(range(600, 900)))
    wait_until(
        lambda: row_count(iceberg_hadoop_table(warehouse, "shop.orders")),
        180,
        what="every record",
        until=lambda n: n >= 900,
    )
    lake.api.wait_states("orders-hadoop", "RUNNING", ["RUNNING"])
    table = iceberg_hadoop_table(warehouse, "shop.orders")
    rows = rows_of(table)
    assert table is not None and rows is not None
    assert_each_record_once(rows, 900)
    (batches,) = committed_batches(table).values()
    assert len(batches) == len(set(batches)), "a batch id committed twice"
    assert lake.worker is not None
    assert f"Batch {in_table} is in Iceberg table shop.orders already" in lake.worker.log_text()
    lake.api.call("DELETE", "/connectors/orders-hadoop", 204)


def test_a_batch_of_four_kafka_partitions_is_one_file_per_core(lake: Lake) -> None:
    """The worker's Spark has two cores (`local[2]`): a batch of a 4-partition topic is
    written as two data files, not one per Kafka partition, as Iceberg's Kafka Connect
    sink with a task per core would (`worker.connectors.table_files`)."""
    _, warehouse = lake.hadoop_sink("spread", "shop.spread", 4, 200)
    table = wait_until(
        lambda: iceberg_hadoop_table(warehouse, "shop.spread"),
        120,
        what="the backlog",
        until=lambda found: row_count(found) >= 200,
    )
    lake.api.call("DELETE", "/connectors/spread", 204)

    rows = rows_of(table)
    assert rows is not None
    assert_each_record_once(rows, 200)
    assert set(rows.column("partition").to_pylist()) == {0, 1, 2, 3}
    first = table.metadata.snapshots[0].summary
    assert first is not None
    assert first["added-data-files"] == "2"


def test_jdbc_catalog_on_postgres_two_tasks_commit_one_table(lake: Lake) -> None:
    topic = new_topic(lake.broker.bootstrap_servers, "payments", 2)
    warehouse = lake.root / "jdbc-lake"
    produce(lake.broker.bootstrap_servers, topic, keyed(range(400)))
    config = lake.config(
        topic,
        **{
            "tasks.max": "2",
            "iceberg.tables": "shop.payments",
            "iceberg.catalog.type": "jdbc",
            "iceberg.catalog.uri": lake.postgres.jdbc_url,
            "iceberg.catalog.jdbc.user": lake.postgres.user,
            "iceberg.catalog.jdbc.password": PLACEHOLDER,
            "iceberg.catalog.warehouse": str(warehouse),
            "iceberg.tables.default-partition-by": "partition, bucket(4, key)",
        },
    )
    lake.put("payments-jdbc", config)
    catalog = SqlCatalog("iceberg", uri=lake.postgres.url, warehouse=f"file://{warehouse}")

    def loaded() -> Table | None:
        return (
            catalog.load_table("shop.payments") if catalog.table_exists("shop.payments") else None
        )

    wait_until(lambda: row_count(loaded()), 120, what="every payment", until=lambda n: n >= 400)
    lake.api.wait_states("payments-jdbc", "RUNNING", ["RUNNING", "RUNNING"])
    table = loaded()
    rows = rows_of(table)
    assert table is not None and rows is not None
    assert_each_record_once(rows, 400)
    assert len(committed_batches(table)) == 2, "each task commits under its own app id"
    assert table.properties["commit.retry.num-retries"] == "20"
    assert [f.name for f in table.spec().fields] == ["partition", "key_bucket"]
    assert lake.worker is not None
    raced = lake.worker.log_text().count("raced another commit")
    print(f"commits retried by a task after a race with the other: {raced}")
    stored = lake.api.call("GET", "/connectors/payments-jdbc/config", 200).json()
    assert stored["iceberg.catalog.jdbc.password"] == PLACEHOLDER

    # An offsets reset removes the checkpoints, and with them the app ids the table
    # knows: the records are written again, not skipped as batches committed already.
    lake.api.call("PUT", "/connectors/payments-jdbc/stop", 204)
    lake.api.once_tasks_stopped("DELETE", "/connectors/payments-jdbc/offsets")
    lake.api.call("PUT", "/connectors/payments-jdbc/resume", 202)
    wait_until(lambda: row_count(loaded()), 120, what="the second pass", until=lambda n: n >= 800)
    table = loaded()
    assert table is not None
    assert len(committed_batches(table)) == 4
    lake.api.call("DELETE", "/connectors/payments-jdbc", 204)


def test_a_new_column_fails_the_task_unless_the_schema_may_evolve(
    lake: Lake, tansu_broker: EmbeddedBroker
) -> None:
    """The records are on the default broker (Tansu), read by the Python Kafka source:
    Spark's JVM source takes Tansu's ListOffsets answer, short of a partition's end."""
    servers = tansu_broker.bootstrap_servers
    topic = new_topic(servers, "shouts", 1)
    warehouse = lake.root / "evolving-lake"
    produce(servers, topic, keyed(range(50)))
    before = "SELECT CAST(key AS STRING) AS key, partition, offset FROM source"
    config = lake.config(
        topic,
        **{
            "kafka.bootstrap.servers": servers,
            "kafka.client": "python",
            "iceberg.tables": "shop.shouts",
            "iceberg.catalog.warehouse": str(warehouse),
            "transform.sql": before,
        },
    )
    lake.put("shouts", config)
    wait_until(
        lambda: row_count(iceberg_hadoop_table(warehouse, "shop.shouts")),
        120,
        what="the rows before the change",
        until=lambda n: n >= 50,
    )
    after = before.replace(" FROM", ", upper(CAST(value AS STRING)) AS shout FROM")
    lake.put("shouts", {**config, "transform.sql": after}, 200)
    produce(servers, topic, keyed(range(50, 100)))
    trace = lake.trace("shouts")
    assert "new columns shout string" in trace, trace[:2000]
    assert "iceberg.tables.evolve-schema-enabled=true" in trace

    lake.put(
        "shouts",
        {**config, "transform.sql": after, "iceberg.tables.evolve-schema-enabled": "true"},
        200,
    )
    wait_until(
        lambda: row_count(iceberg_hadoop_table(warehouse, "shop.shouts")),
        120,
        what="the rows after the change",
        until=lambda n: n >= 100,
    )
    rows = rows_of(iceberg_hadoop_table(warehouse, "shop.shouts"))
    assert rows is not None
    assert_each_record_once(rows, 100)
    shouts = dict(
        zip(rows.column("key").to_pylist(), rows.column("shout").to_pylist(), strict=True)
    )
    assert shouts["key-0"] is None and shouts["key-99"] == "VALUE-99"
    lake.api.call("DELETE", "/connectors/shouts", 204)


def test_bad_catalogs_and_tables_fail_their_task_with_a_clear_trace(lake: Lake) -> None:
    topic = new_topic(lake.broker.bootstrap_servers, "bad", 1)
    produce(lake.broker.bootstrap_servers, topic, keyed(range(10)))
    closed_port = free_port()
    jdbc = {
        "iceberg.catalog.type": "jdbc",
        "iceberg.catalog.jdbc.user": lake.postgres.user,
        "iceberg.tables": "shop.orders",
    }
    bad = {
        "closed-port": {
            **jdbc,
            "iceberg.catalog.uri": f"jdbc:postgresql://127.0.0.1:{closed_port}/lake",
            "iceberg.catalog.jdbc.password": WRONG_PASSWORD,
        },
        "wrong-password": {
            **jdbc,
            "iceberg.catalog.uri": lake.postgres.jdbc_url,
            "iceberg.catalog.jdbc.password": WRONG_PASSWORD,
        },
        "no-partition-column": {
            "iceberg.tables": "shop.regions",
            "iceberg.tables.default-partition-by": "region, days(timestamp)",
        },
        "bad-record": {
            "iceberg.tables": "shop.numbers",
            "transform.sql": "SELECT CAST(CAST(value AS STRING) AS INT) AS n FROM source",
        },
        "no-table": {
            "iceberg.tables": "shop.missing",
            "iceberg.tables.auto-create-enabled": "false",
        },
    }
    for name, keys in bad.items():
        warehouse = str(lake.root / f"{name}-lake")
        lake.put(name, lake.config(topic, **{"iceberg.catalog.warehouse": warehouse, **keys}))
    traces = {name: lake.trace(name) for name in bad}

    assert f"127.0.0.1:{closed_port}" in traces["closed-port"], traces["closed-port"][:2000]
    assert "password authentication failed" in traces["wrong-password"], traces["wrong-password"][
        :2000
    ]
    assert "iceberg.tables.default-partition-by names region" in traces["no-partition-column"]
    assert (
        f"transform.sql failed on the record at topic {topic}, partition 0, offset 0"
        in (traces["bad-record"])
    )
    assert "shop.missing does not exist" in traces["no-table"]
    assert "auto-create-enabled=false" in traces["no-table"]
    for name, trace in traces.items():
        assert WRONG_PASSWORD not in trace, name
    assert lake.worker is not None
    assert WRONG_PASSWORD not in lake.worker.log_text()
    validated = lake.api.call(
        "PUT",
        "/connector-plugins/kafka-to-iceberg/config/validate",
        200,
        json=lake.config(topic, **{"iceberg.catalog.warehouse": "/x", **bad["wrong-password"]}),
    ).json()
    (password,) = (
        c["value"]
        for c in validated["configs"]
        if c["value"]["name"] == "iceberg.catalog.jdbc.password"
    )
    assert password["value"] == HIDDEN
    assert lake.api.call("GET", "/connectors", 200).json()  # the worker runs on
    for name in bad:
        lake.api.call("DELETE", f"/connectors/{name}", 204)
