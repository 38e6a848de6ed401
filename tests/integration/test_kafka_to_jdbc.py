"""`kafka-to-jdbc` against a real PostgreSQL and Apache Kafka, on one worker: inserts
once across a SIGKILL of the worker after which each task replays a batch the database
holds (the ledger skips it); upserts keep a key's latest value, tombstones delete, update
changes only rows there, auto.create and auto.evolve make and widen tables; bad inputs
(an unreachable database, a wrong password, a missing table, a constraint, a value that
does not convert) each fail their task naming the table and the record, never the
password, or go to the dead letter queue under errors.tolerance=all while the rest is
written; a database restart mid-run loses and duplicates nothing; and an offsets reset
writes every record again (the ledger knows batches by the checkpoint's query id)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.kafka_topics import new_topic, produce, read_topic
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import free_port
from tests.support.rest_client import Api
from tests.support.restartable_worker import RestartableWorker, forget_newest_commit
from worker.kafka.client import Outgoing
from worker.plugins.checkpoint_layout import checkpoint_dir_for

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 120
LEDGER = "sparkherd_jdbc_sink_batches"
SECRET_VARIABLE = "CONNECTOR_SECRET_POSTGRES"
PASSWORD = "${env:" + SECRET_VARIABLE + "}"
"""The password as a placeholder (`worker` sets the variable): what GET shows."""
ORDER_FIELDS = (("id", "int64"), ("item", "string"), ("qty", "int32"))


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestartableWorker]:
    """The worker, with the database's password in a variable its `env` provider reads."""
    providers = [
        "config.providers=env",
        "config.providers.env.class=env",
        "config.providers.env.param.allowlist.pattern=CONNECTOR_SECRET_.*",
    ]
    started = RestartableWorker(
        "jdbc-sink",
        broker.bootstrap_servers,
        tmp_path_factory.mktemp("jdbc-sink"),
        providers,
        {SECRET_VARIABLE: postgres.password},
    )
    try:
        started.start()
        yield started
    finally:
        started.process.kill()


def envelope(fields: Sequence[tuple[str, str]], payload: dict[str, Any] | None) -> bytes | None:
    """Connect's JSON with schema (what JsonConverter writes with schemas.enable)."""
    if payload is None:
        return None
    schema = {
        "type": "struct",
        "optional": False,
        "fields": [{"field": name, "type": kind, "optional": True} for name, kind in fields],
    }
    return json.dumps({"schema": schema, "payload": payload}).encode()


def orders(numbers: range, qty: int = 1) -> list[Outgoing]:
    return [
        Outgoing(
            str(n).encode(), envelope(ORDER_FIELDS, {"id": n, "item": f"item-{n}", "qty": qty})
        )
        for n in numbers
    ]


def sink_config(
    postgres: PostgresServer, broker: EmbeddedBroker, topic: str, **settings: str
) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-jdbc",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        **postgres.connection_config(),
        "connection.password": PASSWORD,
        "key.converter": "string",
        "value.converter": "json",
        "auto.create": "true",
        "trigger.interval.ms": "500",
        **{key.replace("_", "."): value for key, value in settings.items()},
    }


def rows(postgres: PostgresServer, sql: str) -> list[tuple[Any, ...]]:
    try:
        return postgres.execute(sql)
    except Exception:  # the table is not there yet
        return []


def wait_rows(postgres: PostgresServer, sql: str, count: int, what: str) -> list[tuple[Any, ...]]:
    return wait_until(
        lambda: rows(postgres, sql), TIMEOUT_S, what=what, until=lambda found: len(found) >= count
    )


def failed_trace(api: Api, name: str) -> str:
    status = wait_until(
        lambda: api.status(name),
        TIMEOUT_S,
        what=f"{name}'s task to fail",
        until=lambda s: [t["state"] for t in s["tasks"]] == ["FAILED"],
    )
    trace: str = status["tasks"][0]["trace"]
    return trace


def settled(checkpoint: Path) -> bool:
    """Whether the task's newest batch is committed (nothing in flight)."""

    def newest(log: str) -> int:
        names = [p.name for p in (checkpoint / log).iterdir() if p.name.isdigit()]
        return max(map(int, names), default=-1)

    return newest("offsets") == newest("commits") >= 0


def test_inserts_once_across_a_sigkill_and_a_replayed_batch(
    broker: EmbeddedBroker, worker: RestartableWorker, postgres: PostgresServer
) -> None:
    topic = new_topic(broker.bootstrap_servers, "orders", 2)
    api = Api(worker.process.url, timeout_s=TIMEOUT_S)
    produce(broker.bootstrap_servers, topic, orders(range(300)))
    config = sink_config(postgres, broker, topic, tasks_max="2")
    api.call("PUT", "/connectors/orders/config", 201, json=config)
    query = f'SELECT id FROM "{topic}"'
    wait_rows(postgres, query, 300, "the first wave")
    shown = api.call("GET", "/connectors/orders/config", 200).json()
    assert shown["connection.password"] == PASSWORD

    produce(broker.bootstrap_servers, topic, orders(range(300, 600)))
    wait_rows(postgres, query, 600, "the second wave")
    checkpoints = [
        checkpoint_dir_for(worker.process.checkpoint_root, "orders", task) for task in range(2)
    ]
    wait_until(lambda: [settled(c) for c in checkpoints], TIMEOUT_S, what="idle tasks", until=all)
    worker.process.kill()
    # Each task now replays a batch the database holds, as after a crash between the
    # database's commit and Spark's.
    replayed = [forget_newest_commit(checkpoint) for checkpoint in checkpoints]
    produce(broker.bootstrap_servers, topic, orders(range(600, 900)))
    api = worker.start()
    api.wait_states("orders", "RUNNING", ["RUNNING", "RUNNING"])
    wait_rows(postgres, query, 900, "every record after the restart")
    wait_until(lambda: [settled(c) for c in checkpoints], TIMEOUT_S, what="the rest", until=all)
    found = rows(postgres, query)
    ledger = postgres.execute(f"SELECT query_id, batch_id, task FROM {LEDGER}")
    api.call("DELETE", "/connectors/orders", 204)

    assert sorted(r[0] for r in found) == list(range(900)), "duplicates or losses"
    assert len({q for q, _, _ in ledger}) == 2, "one query id per task's checkpoint"
    by_task = {task: {b for _, b, t in ledger if t == task} for task in range(2)}
    assert all(replayed[task] in by_task[task] for task in range(2))
    skipped = worker.process.log_text().count("(ledger): not written again")
    assert skipped == 2, "each task's replayed batch is skipped"


def keyed_envelope(
    n: int, payload: dict[str, Any] | None, fields: Sequence[tuple[str, str]]
) -> Outgoing:
    return Outgoing(envelope((("id", "int64"),), {"id": n}), envelope(fields, payload))


def test_upsert_keeps_the_latest_tombstones_delete_update_changes_only_rows_there(
    broker: EmbeddedBroker, worker: RestartableWorker, postgres: PostgresServer
) -> None:
    api = Api(worker.process.url, timeout_s=TIMEOUT_S)
    upserted = new_topic(broker.bootstrap_servers, "upserted", 1)
    produce(
        broker.bootstrap_servers,
        upserted,
        [
            *(
                keyed_envelope(n, {"id": n, "item": f"item-{n}", "qty": 1}, ORDER_FIELDS)
                for n in range(10)
            ),
            *(
                keyed_envelope(n, {"id": n, "item": f"item-{n}", "qty": 2}, ORDER_FIELDS)
                for n in range(5)
            ),
            keyed_envelope(5, None, ORDER_FIELDS),
            keyed_envelope(6, None, ORDER_FIELDS),
        ],
    )
    keys = {"key.converter": "json", "insert.mode": "upsert", "pk.mode": "record_key"}
    api.call(
        "PUT",
        "/connectors/upserts/config",
        201,
        json=sink_config(postgres, broker, upserted, **keys, delete_enabled="true"),
    )
    updated = new_topic(broker.bootstrap_servers, "updated", 1)
    postgres.execute(f'CREATE TABLE "{updated}" (id BIGINT PRIMARY KEY, item TEXT)')
    for n in range(5):
        postgres.execute(f'INSERT INTO "{updated}" VALUES (%s, %s)', (n, f"old-{n}"))
    produce(
        broker.bootstrap_servers,
        updated,
        [
            keyed_envelope(n, {"id": n, "item": f"item-{n}", "qty": 9}, ORDER_FIELDS)
            for n in range(3, 8)
        ],
    )
    api.call(
        "PUT",
        "/connectors/updates/config",
        201,
        json=sink_config(
            postgres, broker, updated, **{**keys, "insert.mode": "update", "auto.evolve": "true"}
        ),
    )
    wait_rows(postgres, f'SELECT id FROM "{upserted}" WHERE qty = 2', 5, "the upserted rows")
    wait_rows(postgres, f'SELECT id FROM "{updated}" WHERE qty = 9', 2, "the updated rows")
    upsert_rows = rows(postgres, f'SELECT id, item, qty FROM "{upserted}" ORDER BY id')
    update_rows = rows(postgres, f'SELECT id, item, qty FROM "{updated}" ORDER BY id')
    for name in ("upserts", "updates"):
        api.call("DELETE", f"/connectors/{name}", 204)

    assert upsert_rows == [
        *((n, f"item-{n}", 2) for n in range(5)),
        *((n, f"item-{n}", 1) for n in range(7, 10)),
    ]
    assert update_rows == [
        *((n, f"old-{n}", None) for n in range(3)),
        (3, "item-3", 9),
        (4, "item-4", 9),
    ]
    (primary_key,) = postgres.execute(
        "SELECT count(*) FROM information_schema.table_constraints "
        "WHERE table_name = %s AND constraint_type = 'PRIMARY KEY'",
        (upserted,),
    )
    assert primary_key == (1,), "auto.create made id the primary key"


def test_bad_inputs_fail_their_task_naming_table_and_record_or_go_to_the_dlq(
    broker: EmbeddedBroker, worker: RestartableWorker, postgres: PostgresServer
) -> None:
    api = Api(worker.process.url, timeout_s=TIMEOUT_S)
    for refused, reason in (
        ({"insert.mode": "upsert"}, "pk.mode: insert.mode=upsert writes by primary key"),
        ({"delete.enabled": "true", "pk.mode": "record_value"}, "delete.enabled: needs"),
        ({"value.converter": "string"}, "value.converter: kafka-to-jdbc cannot write these"),
    ):
        answer = api.call(
            "PUT",
            "/connectors/refused/config",
            400,
            json=sink_config(postgres, broker, "t", **refused),
        )
        assert reason in answer.json()["message"]
    topic = new_topic(broker.bootstrap_servers, "bad", 2)
    # Record 7, alone in partition 1, breaks the table's CHECK; the rest are good.
    good = [Outgoing(r.key, r.value, partition=0) for r in orders(range(7))]
    (breaking,) = (Outgoing(r.key, r.value, partition=1) for r in orders(range(7, 8), qty=-1))
    produce(broker.bootstrap_servers, topic, [*good, breaking])
    checked = f"{topic}-checked"
    postgres.execute(
        f'CREATE TABLE "{checked}" (id BIGINT, item TEXT, qty INTEGER CHECK (qty > 0))'
    )
    typed = f"{topic}-typed"
    postgres.execute(f'CREATE TABLE "{typed}" (id BIGINT, item INTEGER, qty INTEGER)')
    dlq = f"{topic}-dlq"
    wrong_password = "wrong-pw-5521"
    closed_port = free_port()
    bad = {
        "unreachable": {"connection.url": f"jdbc:postgresql://127.0.0.1:{closed_port}/db"},
        "wrong-password": {"connection.password": wrong_password},
        "missing-table": {"auto.create": "false", "table.name.format": f"{topic}-missing"},
        "constraint": {"table.name.format": checked},
        "type": {"table.name.format": typed},
    }
    for name, settings in bad.items():
        api.call(
            "PUT",
            f"/connectors/{name}/config",
            201,
            json={**sink_config(postgres, broker, topic), **settings},
        )
    tolerant = {
        "table.name.format": f"{checked}",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    api.call(
        "PUT",
        "/connectors/tolerant/config",
        201,
        json={**sink_config(postgres, broker, topic), **tolerant},
    )
    traces = {name: failed_trace(api, name) for name in bad}
    written = wait_rows(postgres, f'SELECT id FROM "{checked}"', 7, "the tolerant connector's rows")
    dead = wait_until(lambda: read_topic(broker.bootstrap_servers, dlq), TIMEOUT_S, what="the DLQ")
    api.call("DELETE", "/connectors/tolerant", 204)  # the failed ones stay failed

    assert f"Cannot connect to PostgreSQL 127.0.0.1:{closed_port}/db" in traces["unreachable"]
    assert "password authentication failed" in traces["wrong-password"]
    assert f'Table "{topic}-missing" does not exist' in traces["missing-table"]
    assert "auto.create=false" in traces["missing-table"]
    assert f'table "{checked}"' in traces["constraint"]
    assert f"the record at topic {topic}, partition 1, offset 0" in traces["constraint"]
    assert "violates check constraint" in traces["constraint"]
    assert f'table "{typed}"' in traces["type"]
    assert f"the record at topic {topic}, partition " in traces["type"]
    assert "invalid input syntax for type integer" in traces["type"]
    assert all(wrong_password not in trace for trace in traces.values())
    assert wrong_password not in worker.process.log_text()
    assert sorted(r[0] for r in written) == list(range(7))
    (record,) = dead
    headers = dict(record.headers)
    assert record.key == b"7"
    assert headers["__connect.errors.stage"] == b"TASK_PUT"
    assert headers["__connect.errors.class.name"] == b"kafka-to-jdbc"
    assert b"violates check constraint" in headers["__connect.errors.exception.message"]


def test_a_database_restart_mid_run_loses_and_duplicates_nothing_and_a_reset_writes_again(
    broker: EmbeddedBroker, worker: RestartableWorker, postgres: PostgresServer
) -> None:
    api = Api(worker.process.url, timeout_s=TIMEOUT_S)
    topic = new_topic(broker.bootstrap_servers, "restarted", 1)
    produce(broker.bootstrap_servers, topic, orders(range(100)))
    retrying = {"max.retries": "100", "retry.backoff.ms": "300"}
    api.call(
        "PUT",
        "/connectors/restarted/config",
        201,
        json=sink_config(postgres, broker, topic, **retrying),
    )
    query = f'SELECT id FROM "{topic}"'
    wait_rows(postgres, query, 100, "the rows before the restart")
    postgres.stop()
    try:
        for start in range(100, 400, 100):
            produce(broker.bootstrap_servers, topic, orders(range(start, start + 100)))
            time.sleep(1)
    finally:
        postgres.start()
    produce(broker.bootstrap_servers, topic, orders(range(400, 500)))
    wait_rows(postgres, query, 500, "every row after the restart")
    status = api.status("restarted")
    time.sleep(1)
    found = rows(postgres, query)
    # An offsets reset starts a new checkpoint, whose batch ids count from 0 again: the
    # ledger knows them under the new query id, so every record is written again.
    api.call("PUT", "/connectors/restarted/stop", 204)
    api.once_tasks_stopped("DELETE", "/connectors/restarted/offsets")
    api.call("PUT", "/connectors/restarted/resume", 202)
    again = wait_rows(postgres, query, 1000, "every row again after the reset")
    ledger = postgres.execute(
        f"SELECT DISTINCT query_id FROM {LEDGER} WHERE connector = 'restarted'"
    )
    api.call("DELETE", "/connectors/restarted", 204)

    assert [t["state"] for t in status["tasks"]] == ["RUNNING"]
    assert sorted(r[0] for r in found) == list(range(500)), "duplicates or losses"
    assert "trying again" in worker.process.log_text()
    assert sorted(r[0] for r in again) == sorted([*range(500), *range(500)])
    assert len(ledger) == 2, "the reset's checkpoint has a query id of its own"
