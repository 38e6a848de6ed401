"""`jdbc-to-kafka` against a real PostgreSQL and Apache Kafka, on one worker: tables
split over tasks and each row published once, through a task restart, KIP-875's offsets
(GET shows each table's mark, PATCH moves it, DELETE resets it), a `query`, hostile
names, bad configs (400s), faults a task reports naming the table (never the password),
and a database restart mid-run that loses and duplicates nothing."""

from __future__ import annotations

import base64
import contextlib
import json
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from functools import partial
from typing import Any

import psycopg2
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.kafka_topics import read_topic
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import WorkerProcess, free_port, ready_worker
from tests.support.rest_client import Api
from worker.connectors.jdbc.jdbc_to_kafka import settings_of, table_source
from worker.kafka.client import Record

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 120
ODD_TABLE = "Odd--Name"
"""A table name that is a comment if formatted into a statement rather than quoted (and
still a Kafka topic name)."""
HOSTILE_COLUMN = 'x") OR TRUE OR ("y'
"""A column name that is SQL if formatted into a statement rather than quoted (a `query`
holds no `;`, so no statement can follow)."""
DOTTED = "kind.of `row`"
"""A column name that Spark would read as a path into a struct, were it not quoted."""


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("jdbc-worker")
    with ready_worker(
        "jdbc-worker",
        broker.bootstrap_servers,
        root,
        extra=["auto.restart.initial.backoff.ms=1000"],
        timeout_s=TIMEOUT_S,
    ) as process:
        yield process


def source_config(
    postgres: PostgresServer, broker: EmbeddedBroker, prefix: str, **settings: str
) -> dict[str, str]:
    return {
        "connector.class": "jdbc-to-kafka",
        **postgres.connection_config(),
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topic.prefix": prefix,
        "poll.interval.ms": "300",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "-1",
        "exactly.once.support": "required",
        **{key.replace("_", "."): value for key, value in settings.items()},
    }


def records(broker: EmbeddedBroker, topic: str) -> list[Record]:
    try:
        return read_topic(broker.bootstrap_servers, topic, "read_committed")
    except Exception:  # the task has not created the topic yet
        return []


def row_of(record: Record) -> dict[str, Any]:
    """A record's row: its plain JSON value, or the payload of a JSON envelope."""
    value: dict[str, Any] = json.loads(record.value or b"")
    return value["payload"] if set(value) == {"schema", "payload"} else value


def ids(broker: EmbeddedBroker, topic: str, field: str = "id") -> Counter[int]:
    return Counter(row_of(r)[field] for r in records(broker, topic))


def wait_for_ids(broker: EmbeddedBroker, topic: str, count: int, field: str = "id") -> Counter[int]:
    return wait_until(
        partial(ids, broker, topic, field),
        TIMEOUT_S,
        what=f"{count} rows in {topic}",
        until=lambda found: sum(found.values()) >= count,
    )


def insert_orders(postgres: PostgresServer, table: str, numbers: range) -> None:
    postgres.execute(
        f"INSERT INTO {table} (id, item, price) "
        "SELECT g, 'item-' || g, g * 1.25 FROM generate_series(%s, %s) g",
        [numbers.start, numbers.stop - 1],
    )


def quoted(name: str) -> str:
    """How the test itself writes a name into its own SQL."""
    return '"' + name.replace('"', '""') + '"'


def insert_rows(postgres: PostgresServer, table: str, numbers: range) -> None:
    postgres.execute(
        f"INSERT INTO {quoted(table)} (id, item, price) "
        "SELECT g, 'item-' || g, g * 1.25 FROM generate_series(%s, %s) g",
        [numbers.start, numbers.stop - 1],
    )


def create_table(postgres: PostgresServer, table: str) -> None:
    postgres.execute(
        f"CREATE TABLE {quoted(table)} (id bigint PRIMARY KEY, item text, "
        "price numeric(8,2), changed timestamptz NOT NULL DEFAULT now(), note jsonb)"
    )


def start_reading(
    api: Api,
    postgres: PostgresServer,
    broker: EmbeddedBroker,
    name: str,
    rows: int,
    **settings: str,
) -> str:
    """Table `name` with rows 1..`rows`, read by connector `name` by its id; the topic."""
    prefix = f"{name}-{free_port()}-"
    create_table(postgres, name)
    insert_rows(postgres, name, range(1, rows + 1))
    config = source_config(
        postgres,
        broker,
        prefix,
        mode="incrementing",
        incrementing_column_name="id",
        table_whitelist=name,
        **settings,
    )
    api.call("PUT", f"/connectors/{name}/config", 201, json=config)
    return prefix + name


def test_a_planned_batch_reads_the_same_rows_when_it_runs_again(
    postgres: PostgresServer, broker: EmbeddedBroker
) -> None:
    """Without Spark: the statements a task runs. A batch's rows lie between two marks,
    so rows added after it was planned are not in its replay; rows stamped within
    `timestamp.delay.interval.ms` are not planned yet; the sessions are READ ONLY."""
    create_table(postgres, "replayed")
    insert_rows(postgres, "replayed", range(1, 21))
    postgres.execute(
        "UPDATE replayed SET changed = timestamptz '2024-01-01' + least(id, 10) * interval '1 ms'"
    )
    config = source_config(
        postgres,
        broker,
        "unused-",
        mode="timestamp+incrementing",
        incrementing_column_name="id",
        timestamp_column_name="changed",
        table_whitelist="replayed",
        batch_max_rows="8",
        timestamp_delay_interval_ms="3600000",
    )
    source = table_source(settings_of(config)[0], "replayed")
    with contextlib.closing(source.connect()) as connection:
        end = source.next_mark(connection, None)
        assert end is not None
        planned = list(source.rows(None, end))
        insert_rows(postgres, "replayed", range(21, 31))  # stamped now(): within the delay
        assert list(source.rows(None, end)) == planned
        assert [row[0] for row in planned] == list(range(1, 9))
        assert planned[0][1:3] == ("item-1", Decimal("1.25"))
        middle = source.next_mark(connection, end)
        assert middle is not None and middle.incrementing == 16, "one timestamp, then by id"
        assert [row[0] for row in source.rows(end, middle)] == list(range(9, 17))
        rest = source.next_mark(connection, middle)
        assert rest is not None
        assert [row[0] for row in source.rows(middle, rest)] == list(range(17, 21))
        assert source.next_mark(connection, rest) is None
    by_time = table_source(settings_of({**config, "mode": "timestamp"})[0], "replayed")
    with contextlib.closing(by_time.connect()) as connection:
        end = by_time.next_mark(connection, None)
        assert end is not None
        assert [row[0] for row in by_time.rows(None, end)] == list(range(1, 9))
        tied = by_time.next_mark(connection, end)
        assert tied is not None, "rows 10 to 20 share a timestamp: a batch takes them all"
        assert Counter(row[0] for row in by_time.rows(end, tied)) == Counter(range(9, 21))
        assert by_time.next_mark(connection, tied) is None
        with (
            pytest.raises(psycopg2.errors.ReadOnlySqlTransaction),
            connection.cursor() as cursor,
        ):
            cursor.execute("DELETE FROM replayed")


def test_tables_split_over_tasks_are_published_once_across_a_restart(
    worker: WorkerProcess, postgres: PostgresServer, tansu_broker: EmbeddedBroker
) -> None:
    """Two tables over two tasks, by timestamp and id, in batches of at most 10 rows;
    a restart of the tasks between two inserts: every row once, its value the row as
    plain JSON, no key (Confluent's default). `Odd--Name` is read only if quoted.
    Published to the default broker (Tansu, no transactions: with
    exactly.once.support=requested, the default, the duplicate check alone keeps each
    row once); the other tests here publish to Apache Kafka, with transactions required."""
    broker = tansu_broker
    api, prefix = Api(worker.url, TIMEOUT_S), f"split-{free_port()}-"
    for table in ("orders", ODD_TABLE):
        create_table(postgres, table)
        insert_rows(postgres, table, range(1, 26))
    config = source_config(
        postgres,
        broker,
        prefix,
        mode="timestamp+incrementing",
        incrementing_column_name="id",
        timestamp_column_name="changed",
        batch_max_rows="10",
        table_whitelist=f"orders, {ODD_TABLE}",
        exactly_once_support="requested",
    )
    api.call("PUT", "/connectors/split/config", 201, json={**config, "tasks.max": "3"})
    api.wait_states("split", "RUNNING", ["RUNNING", "RUNNING"])
    checked = api.call("PUT", "/connector-plugins/jdbc-to-kafka/config/validate", 200, json=config)
    shown = api.call("GET", "/connectors/split/config", 200)
    for answer in (checked, shown):
        assert postgres.password not in answer.text and "[hidden]" in answer.text
    for table in ("orders", ODD_TABLE):
        wait_for_ids(broker, prefix + table, 25)

    api.call("POST", "/connectors/split/restart?includeTasks=true", 202)
    for table in ("orders", ODD_TABLE):
        insert_rows(postgres, table, range(26, 41))
    for table in ("orders", ODD_TABLE):
        found = wait_for_ids(broker, prefix + table, 40)
        assert found == Counter(range(1, 41)), f"every row of {table} once"
    published = records(broker, f"{prefix}orders")
    assert {r.key for r in published} == {None}
    first = json.loads(published[0].value or b"")
    assert {k: first[k] for k in ("id", "item")} == {"id": 1, "item": "item-1"}
    # A decimal as Connect's JsonConverter writes one by default: its unscaled value's
    # bytes in base64 (decimal.format=BASE64); a null as null.
    unscaled = int.from_bytes(base64.b64decode(first["price"]), "big", signed=True)
    assert Decimal(unscaled).scaleb(-2) == Decimal("1.25")
    assert "changed" in first and first["note"] is None
    api.call("DELETE", "/connectors/split", 204)


def offsets(api: Api, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.call("GET", f"/connectors/{name}/offsets", 200).json()[
        "offsets"
    ]
    return found


def test_offsets_show_move_and_reset_the_high_water_mark(
    worker: WorkerProcess, postgres: PostgresServer, broker: EmbeddedBroker
) -> None:
    """GET shows the table's mark; PATCH moves it back (the rows after it are published
    again); DELETE starts from the beginning."""
    api = Api(worker.url, TIMEOUT_S)
    topic = start_reading(api, postgres, broker, "marks", 30, batch_max_rows="1000")
    wait_for_ids(broker, topic, 30)
    api.call("PUT", "/connectors/marks/stop", 204)
    api.wait_states("marks", "STOPPED", [])
    partition = {"task": 0, "source": 0}
    shown = wait_until(
        partial(offsets, api, "marks"),
        TIMEOUT_S,
        what="the mark after every row",
        until=lambda found: found[0]["offset"] == {"marks": {"incrementing": 30}},
    )
    assert shown == [{"partition": partition, "offset": {"marks": {"incrementing": 30}}}]

    moved = {"offsets": [{"partition": partition, "offset": {"marks": {"incrementing": 20}}}]}
    api.once_tasks_stopped("PATCH", "/connectors/marks/offsets", json=moved)
    bad = {"offsets": [{"partition": partition, "offset": {"marks": {"incrementing": -1}}}]}
    api.call("PATCH", "/connectors/marks/offsets", 400, json=bad)
    api.call("PUT", "/connectors/marks/resume", 202)
    found = wait_for_ids(broker, topic, 40)
    assert found == Counter(range(1, 31)) + Counter(range(21, 31))

    api.call("PUT", "/connectors/marks/stop", 204)
    api.wait_states("marks", "STOPPED", [])
    api.once_tasks_stopped("DELETE", "/connectors/marks/offsets")
    assert offsets(api, "marks") == []
    api.call("PUT", "/connectors/marks/resume", 202)
    found = wait_for_ids(broker, topic, 70)
    assert found == Counter(range(1, 31)) + Counter(range(1, 31)) + Counter(range(21, 31))
    api.call("DELETE", "/connectors/marks", 204)


def test_a_query_by_timestamp_goes_to_the_prefix_topic(
    worker: WorkerProcess, postgres: PostgresServer, broker: EmbeddedBroker
) -> None:
    """A `query` runs as a subquery; its columns (one named to break SQL formatted with
    it) are the mode's; its rows go to `topic.prefix` itself, keyed by `key.field`, in
    JSON with a schema: a `timestamp` without time zone is the UTC instant it names."""
    api, topic = Api(worker.url, TIMEOUT_S), f"picked-{free_port()}"
    postgres.execute(
        "CREATE TABLE events (id serial, kind text, at timestamp NOT NULL DEFAULT now())"
    )
    postgres.execute(
        "INSERT INTO events (kind, at) SELECT CASE WHEN mod(g, 2) = 0 THEN 'keep' ELSE 'skip' END, "
        "timestamp '2024-01-01' + g * interval '1 second' FROM generate_series(1, 20) g"
    )
    config = source_config(
        postgres,
        broker,
        topic,
        mode="timestamp+incrementing",
        incrementing_column_name=HOSTILE_COLUMN,
        timestamp_column_name="at",
        query=f"SELECT id AS {quoted(HOSTILE_COLUMN)}, kind AS {quoted(DOTTED)}, at "
        "FROM events WHERE kind = 'keep'",
        key_field=DOTTED,
    )
    config["value.converter.schemas.enable"] = "true"
    api.call("PUT", "/connectors/picked/config", 201, json=config)
    found = wait_for_ids(broker, topic, 10, HOSTILE_COLUMN)
    assert found == Counter(range(2, 21, 2))
    assert {r.key for r in records(broker, topic)} == {b"keep"}
    first = json.loads(records(broker, topic)[0].value or b"")
    assert first["payload"][DOTTED] == "keep"
    assert first["payload"]["at"] == 1704067202000  # 2024-01-01T00:00:02Z in milliseconds
    [at] = [f for f in first["schema"]["fields"] if f["field"] == "at"]
    assert at["name"] == "org.apache.kafka.connect.data.Timestamp"
    api.call("DELETE", "/connectors/picked", 204)


def test_bad_configs_are_refused_at_creation(
    worker: WorkerProcess, postgres: PostgresServer, broker: EmbeddedBroker
) -> None:
    api = Api(worker.url, TIMEOUT_S)
    config = source_config(
        postgres, broker, "bad-", mode="incrementing", incrementing_column_name="id"
    )
    refusals = {
        "neither": config,
        "both": {**config, "table.whitelist": "orders", "query": "SELECT 1 AS id"},
        "no-column": {**config, "table.whitelist": "orders", "mode": "timestamp"},
        "statements": {**config, "query": "SELECT 1 AS id; DROP TABLE orders"},
        "three-parts": {**config, "table.whitelist": "a.b.c"},
        "bad-topic": {**config, "table.whitelist": "orders", "topic.prefix": "no spaces "},
    }
    messages = {
        name: api.call("PUT", f"/connectors/{name}/config", 400, json=body).json()["message"]
        for name, body in refusals.items()
    }
    assert not [name for name, message in messages.items() if postgres.password in message]
    assert "exactly one of table.whitelist and query" in messages["neither"]
    assert "exactly one of table.whitelist and query" in messages["both"]
    assert "timestamp.column.name" in messages["no-column"]
    assert "without ';'" in messages["statements"]
    assert "'a.b.c' is not table or schema.table" in messages["three-parts"]
    assert "topic.prefix" in messages["bad-topic"]


def test_faults_fail_the_task_naming_the_table_never_the_password(
    worker: WorkerProcess, postgres: PostgresServer, broker: EmbeddedBroker
) -> None:
    api = Api(worker.url, TIMEOUT_S)
    create_table(postgres, "present")
    config = source_config(
        postgres,
        broker,
        "faults-",
        mode="incrementing",
        incrementing_column_name="id",
        table_whitelist="present",
        connection_attempts="1",
        **{"auto.restart.enabled": "false"},  # they stay FAILED, idle, to the module's end
    )
    unreachable = f"jdbc:postgresql://127.0.0.1:{free_port()}/{postgres.database}"
    faults = {
        "unreachable": ({"connection.url": unreachable}, "Cannot connect"),
        "wrong-password": (
            {"connection.password": "not-" + postgres.password},
            "password authentication failed",
        ),
        "missing-table": ({"table.whitelist": "absent"}, '"absent" does not exist'),
        "missing-column": ({"incrementing.column.name": "serial"}, "has no column 'serial'"),
    }
    for name, (changed, _) in faults.items():
        api.call("PUT", f"/connectors/{name}/config", 201, json={**config, **changed})
    for name, (changed, reason) in faults.items():
        status = api.wait_states(name, "RUNNING", ["FAILED"])
        trace = status["tasks"][0]["trace"]
        table = changed.get("table.whitelist", "present")
        assert trace.startswith(
            f"worker.connectors.jdbc.source.TableReadError: Cannot read table {table!r}"
        )
        assert reason in trace, trace
        assert postgres.password not in trace
    assert postgres.password not in worker.log_text()
    api.call("GET", "/connectors", 200)


def test_a_database_restart_mid_run_loses_and_duplicates_nothing(
    worker: WorkerProcess, postgres: PostgresServer, broker: EmbeddedBroker
) -> None:
    """Last in the module: the module's server stops as a crash would (connections cut
    mid-transaction) and starts again while the task polls. Then the table is dropped:
    the query fails (not the task's start), its trace naming the table."""
    api = Api(worker.url, TIMEOUT_S)
    topic = start_reading(
        api,
        postgres,
        broker,
        "bounce",
        100,
        batch_max_rows="20",
        connection_backoff_ms="500",
        connection_attempts="20",
    )
    wait_for_ids(broker, topic, 20)
    postgres.stop()
    postgres.start()
    insert_rows(postgres, "bounce", range(101, 201))
    found = wait_for_ids(broker, topic, 200)
    assert found == Counter(range(1, 201)), "every row once"
    api.wait_states("bounce", "RUNNING", ["RUNNING"])

    postgres.execute("DROP TABLE bounce")  # mid-run: the query, not the start, fails
    trace = api.wait_states("bounce", "RUNNING", ["FAILED"])["tasks"][0]["trace"]
    assert "Cannot read table 'bounce'" in trace and '"bounce" does not exist' in trace
    assert postgres.password not in trace
    api.call("DELETE", "/connectors/bounce", 204)
