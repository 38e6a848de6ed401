"""Debezium change events into PostgreSQL, differentially: one topic of change events for
a table (snapshot reads, creates, updates, one setting a column to null, deletes each
followed by its tombstone, a deleted key created again, many changes to one key in a
row, and a truncate, which neither sink applies), its keys and values written by
Connect's own JsonConverter (through the oracle) from structs shaped as Debezium's
envelope, is read by sparkherd's `kafka-to-jdbc` with `ExtractNewRecordState` (upsert by
the record key, `delete.enabled`), once as Debezium 3 configures it and once with
Debezium 2's `drop.tombstones=false`, and by Debezium's own JDBC sink on Kafka Connect,
which reads the envelope itself, as Debezium documents. Each writes its own table of one
PostgreSQL; every table must equal, row for row, the state the events leave (computed
here by applying them in order). The events come in two waves, the second once every
table holds the first: a batch then holds several changes of one key, and a key deleted
in one batch is created again in a later one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, Final

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.connect_oracle import ConnectOracle
from tests.support.debezium_jdbc_sink import change_event_sink_config, debezium_plugin_path
from tests.support.kafka_connect import ConnectWorker
from tests.support.kafka_topics import new_topic, produce
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import WorkerProcess, free_port, ready_worker
from tests.support.rest_client import Api
from worker.kafka.client import Outgoing

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

JSON: Final = "org.apache.kafka.connect.json.JsonConverter"
TIMEOUT_S: Final = 300
SERVER: Final = "dbserver1.public.customers"
CONNECT_DATA: Final = "org.apache.kafka.connect.data"
Spec = dict[str, Any]


def field(called: str, kind: str, optional: bool = True, /, **schema: object) -> Spec:
    """A struct field's schema as Connect's JsonConverter writes it."""
    return {"field": called, "type": kind, "optional": optional, **schema}


def struct(name: str, *fields: Spec) -> Spec:
    return {"type": "struct", "name": name, "optional": False, "fields": list(fields)}


ROW: Final = struct(
    f"{SERVER}.Value",
    field("id", "int64", False),
    field("name", "string", False),
    field("score", "double"),
    field(
        "balance",
        "bytes",
        name=f"{CONNECT_DATA}.Decimal",
        version=1,
        parameters={"scale": "2", "connect.decimal.precision": "10"},
    ),
    field("born", "int32", name=f"{CONNECT_DATA}.Date", version=1),
    field("updated_at", "int64", name=f"{CONNECT_DATA}.Timestamp", version=1),
    field("note", "string"),
)
COLUMNS: Final = tuple(f["field"] for f in ROW["fields"])
SOURCE: Final = struct(
    "io.debezium.connector.postgresql.Source",
    *(field(name, "string", False) for name in ("version", "connector", "name")),
    field("ts_ms", "int64", False),
    field("snapshot", "string"),
    *(field(name, "string", False) for name in ("db", "schema", "table")),
    field("lsn", "int64"),
)
ENVELOPE: Final = struct(
    f"{SERVER}.Envelope",
    {**ROW, "field": "before", "optional": True},
    {**ROW, "field": "after", "optional": True},
    {**SOURCE, "field": "source"},
    field("op", "string", False),
    field("ts_ms", "int64"),
)
KEY: Final = struct(f"{SERVER}.Key", field("id", "int64", False))
SPARKHERD_TABLE: Final = "customers_sparkherd"
"""Where the Debezium 3 recipe's RegexRouter and `${topic}_sparkherd` put the rows."""
LEGACY_TABLE: Final = "customers_debezium2"
DEBEZIUM_TABLE: Final = "customers_debezium"
TABLES: Final = (SPARKHERD_TABLE, LEGACY_TABLE, DEBEZIUM_TABLE)
DEBEZIUM_3_UNWRAP: Final = {"transforms.unwrap.delete.tombstone.handling.mode": "tombstone"}
DEBEZIUM_2_UNWRAP: Final = {"transforms.unwrap.drop.tombstones": "false"}
"""The hard-delete recipe of Debezium 2's days (deletes dropped, their tombstones kept),
which Debezium 3 ignores and sparkherd runs as Debezium 2 did."""

Row = dict[str, Any]


@dataclass(frozen=True)
class Change:
    """One change of key `id`: `op` with the row it leaves (`c`, `r`, `u`), `d`, None
    for the tombstone Debezium writes after a delete, or `t` for a truncate of the
    source table (an event without a key, which neither sink applies by default)."""

    id: int
    op: str | None
    row: Row | None = None


def row(id: int, version: int, **changed: Any) -> Row:
    """Row `id` as its `version`-th change leaves it: every column of every type set."""
    made: Row = {
        "id": id,
        "name": f"customer {id} v{version}",
        "score": id * 1.25 + version / 3,
        "balance": Decimal(id * 10_007 - version * 313).scaleb(-2),
        "born": date(1970, 1, 1) + timedelta(days=id * 1_000 - 40_000 + version),
        "updated_at": datetime(2026, 1, 2, 3, 4, 5, 123_000, UTC)
        + timedelta(hours=id, seconds=version),
        "note": f"note {id}.{version}",
    }
    return made | changed


FIRST_WAVE: Final = (
    *(Change(id, "r", row(id, 0)) for id in range(1, 6)),
    Change(6, "c", row(6, 1)),
    Change(7, "c", row(7, 1)),
    Change(1, "u", row(1, 2, name="renamed")),
    Change(2, "u", row(2, 2, note=None, score=None)),
    Change(3, "d"),
    Change(3, None),
    # Many changes of one key close together: one batch holds them all.
    Change(7, "u", row(7, 2, balance=None)),
    Change(7, "u", row(7, 3)),
    Change(7, "d"),
    Change(7, None),
    Change(7, "c", row(7, 4, born=None)),
    Change(7, "u", row(7, 5, note=None)),
    Change(5, "d"),
    Change(5, None),
    Change(5, "c", row(5, 6)),
)
SECOND_WAVE: Final = (
    Change(6, "u", row(6, 7, note=None)),
    Change(1, "u", row(1, 8, updated_at=None)),
    Change(2, "d"),
    Change(2, None),
    Change(3, "c", row(3, 9)),
    Change(0, "t"),
    Change(4, "d"),
    Change(4, None),
    Change(8, "c", row(8, 10)),
    Change(8, "u", row(8, 11)),
    Change(8, "d"),
    Change(8, None),
    Change(9, "c", row(9, 12)),
    Change(9, "u", row(9, 13, score=-0.5)),
    Change(9, "u", row(9, 14, balance=Decimal("-12345678.99"))),
)


def final_state(changes: Sequence[Change]) -> list[Row]:
    """The rows the changes leave, applied in order, by id."""
    table: dict[int, Row] = {}
    for change in changes:
        if change.row is not None:
            table[change.id] = change.row
        elif change.op != "t":
            table.pop(change.id, None)
    return [table[id] for id in sorted(table)]


def events(oracle: ConnectOracle, topic: str, changes: Sequence[Change]) -> list[Outgoing]:
    """The change events as Connect's JsonConverter writes them (schemas in each), with
    `before` the row as the changes before it left it; a tombstone's value is null."""
    keys = oracle.converter(JSON, {}, key=True)
    values = oracle.converter(JSON, {})
    latest: dict[int, Row] = {}
    written = []
    for n, change in enumerate(changes):
        key = None if change.op == "t" else oracle.write(keys, topic, KEY, {"id": change.id})
        if change.op is None:
            written.append(Outgoing(key, None))
            continue
        before = latest.pop(change.id, None) if change.op in ("u", "d") else None
        if change.row is not None:
            latest[change.id] = change.row
        event = {
            "before": before,
            "after": change.row,
            "source": {
                "version": "3.6.1.Final",
                "connector": "postgresql",
                "name": "dbserver1",
                "ts_ms": 1_767_000_000_000 + n,
                "snapshot": "true" if change.op == "r" else "false",
                "db": "shop",
                "schema": "public",
                "table": "customers",
                "lsn": 24_000_000 + n,
            },
            "op": change.op,
            "ts_ms": 1_767_000_000_500 + n,
        }
        written.append(Outgoing(key, oracle.write(values, topic, ENVELOPE, event)))
    return written


@pytest.fixture(scope="module")
def oracle() -> Iterator[ConnectOracle]:
    with ConnectOracle.start() as started:
        yield started


@dataclass(frozen=True)
class Workers:
    sparkherd: WorkerProcess
    connect: ConnectWorker


@pytest.fixture(scope="module")
def workers(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    """A Kafka Connect worker with Debezium's JDBC sink and a sparkherd worker, started
    side by side."""
    root = tmp_path_factory.mktemp("debezium-to-jdbc")
    settings = {
        "plugin.path": str(debezium_plugin_path(root)),
        "scheduled.rebalance.max.delay.ms": "0",
    }
    connect = ConnectWorker(
        "connect", broker.bootstrap_servers, f"connect-{free_port()}", root, settings
    )
    connect.start()
    try:
        with ready_worker("debezium-to-jdbc", broker.bootstrap_servers, root) as sparkherd:
            connect.wait_ready(TIMEOUT_S)
            yield Workers(sparkherd, connect)
    finally:
        connect.stop(grace_s=30)


def sparkherd_config(
    broker: EmbeddedBroker, postgres: PostgresServer, topic: str, **settings: str
) -> dict[str, str]:
    """What docs/connectors/debezium-to-postgresql.md gives a Debezium user, with
    `settings` over it."""
    return {
        "connector.class": "kafka-to-jdbc",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        **postgres.connection_config(),
        "key.converter": JSON,
        "value.converter": JSON,
        "transforms": "unwrap,route",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": r"[^.]+\.[^.]+\.([^.-]+).*",
        "transforms.route.replacement": "$1",
        "table.name.format": "${topic}_sparkherd",
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "delete.enabled": "true",
        "auto.create": "true",
        "auto.evolve": "true",
        "trigger.interval.ms": "500",
        **settings,
    }


def table_rows(postgres: PostgresServer, table: str) -> list[Row] | None:
    """The table's rows by id, timestamps as UTC instants (Debezium's sink writes a
    Connect Timestamp into `timestamp`, sparkherd into `timestamptz`); None before the
    table is there."""
    try:
        found = postgres.execute(f"SELECT {', '.join(COLUMNS)} FROM {table} ORDER BY id")
    except Exception:  # the table is not there yet
        return None
    rows = [dict(zip(COLUMNS, values, strict=True)) for values in found]
    for each in rows:
        moment = each["updated_at"]
        if moment is not None:
            each["updated_at"] = (
                moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
            )
    return rows


def table_columns(postgres: PostgresServer, table: str) -> list[str]:
    found = postgres.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s",
        (table,),
    )
    return sorted(str(name) for (name,) in found)


def failed_task(api: Api, name: str) -> str | None:
    tasks = api.status(name)["tasks"]
    failed = [t.get("trace", "FAILED") for t in tasks if t["state"] == "FAILED"]
    return str(failed[0]) if failed else None


def all_tables(postgres: PostgresServer, apis: Sequence[tuple[Api, str]]) -> list[list[Row] | None]:
    for api, name in apis:
        if trace := failed_task(api, name):
            raise AssertionError(f"{name}'s task FAILED: {trace[:3000]}")
    return [table_rows(postgres, table) for table in TABLES]


def reached(postgres: PostgresServer, apis: Sequence[tuple[Api, str]], expected: list[Row]) -> None:
    """Until every table holds `expected` (a failed task fails at once)."""
    found = wait_until(
        lambda: all_tables(postgres, apis),
        TIMEOUT_S,
        what="every table to hold the state the change events leave",
        until=lambda found: found == [expected] * len(TABLES),
    )
    assert found == [expected] * len(TABLES)


def test_change_events_leave_the_same_rows_as_debeziums_jdbc_sink(
    broker: EmbeddedBroker,
    postgres: PostgresServer,
    oracle: ConnectOracle,
    workers: Workers,
) -> None:
    topic = new_topic(broker.bootstrap_servers, SERVER, 2)
    written = events(oracle, topic, FIRST_WAVE + SECOND_WAVE)
    produce(broker.bootstrap_servers, topic, written[: len(FIRST_WAVE)])
    sparkherd = Api(workers.sparkherd.url, timeout_s=TIMEOUT_S)
    connect = Api(workers.connect.url, timeout_s=TIMEOUT_S)
    configs = {
        "customers": sparkherd_config(broker, postgres, topic, **DEBEZIUM_3_UNWRAP),
        "customers-debezium2": sparkherd_config(
            broker, postgres, topic, **DEBEZIUM_2_UNWRAP, **{"table.name.format": LEGACY_TABLE}
        ),
    }
    for name, config in configs.items():
        sparkherd.call("PUT", f"/connectors/{name}/config", 201, json=config)
    debezium = change_event_sink_config(
        topic, DEBEZIUM_TABLE, postgres.jdbc_url, postgres.user, postgres.password
    )
    connect.call("PUT", "/connectors/customers/config", 201, json=debezium)
    apis = [*((sparkherd, name) for name in configs), (connect, "customers")]

    reached(postgres, apis, final_state(FIRST_WAVE))
    produce(broker.bootstrap_servers, topic, written[len(FIRST_WAVE) :])
    reached(postgres, apis, final_state(FIRST_WAVE + SECOND_WAVE))
    columns = [table_columns(postgres, table) for table in TABLES]
    assert columns == [sorted(COLUMNS)] * len(TABLES)
