"""A round trip per converter on one real worker, a real broker and real Spark: files
into Kafka through `files-to-kafka` with a converter, and back into files through
`kafka-to-files` with the same converter, the values equal. Also: the worker's own
converter is the default of connectors that name none, a record that cannot be
converted fails its task naming where it is, and bad converter configs are 400s naming
the key."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from datetime import date
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.file_sink import committed_files
from tests.support.kafka_topics import new_topic, produce, read_topic
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, ready_worker
from tests.support.rest_client import Api
from worker.kafka.client import Outgoing

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

ROWS = 20
TYPED = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("day", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
        ("tags", pa.list_(pa.string())),
    ]
)
TYPED_DDL = "id LONG, name STRING, day DATE, amount DECIMAL(10,2), tags ARRAY<STRING>"
AVRO_VALUE = json.dumps(
    {
        "type": "record",
        "name": "Row",
        "namespace": "sparkherd.test",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": ["null", "string"]},
            {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        ],
    }
)
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
WORKER_DEFAULT = [f"key.converter={STRING_CONVERTER}"]
"""The worker's own key converter: what every connector that names none gets."""


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """One worker for every test here (each start costs a Spark start)."""
    root = tmp_path_factory.mktemp("converters")
    with ready_worker("converters", broker.bootstrap_servers, root, WORKER_DEFAULT) as started:
        yield started


def typed_rows() -> list[dict[str, Any]]:
    return [
        {
            "id": n,
            "name": None if n % 7 == 3 else f"naïve-{n}",
            "day": date(2024, 1, 1 + n),
            "amount": Decimal(n * 101) / 100,
            "tags": [f"t{n}"] * (n % 3),
        }
        for n in range(ROWS)
    ]


def drop_parquet(directory: Path, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    """Two files, each written beside the directory and renamed into it."""
    directory.mkdir()
    for part in (0, 1):
        draft = directory.parent / f".{directory.name}-{part}.parquet"
        pq.write_table(pa.Table.from_pylist(rows[part::2], schema), draft)
        os.replace(draft, directory / f"part-{part}.parquet")


def written(output: Path) -> list[dict[str, Any]]:
    return [
        row
        for path in committed_files(output / "task-0")
        for row in pq.read_table(path).to_pylist()
    ]


class RoundTrip:
    """One converter's trip: a files-to-kafka and a kafka-to-files over one topic."""

    def __init__(
        self,
        name: str,
        broker: EmbeddedBroker,
        root: Path,
        rows: list[dict[str, Any]],
        schema: pa.Schema,
    ) -> None:
        self.name = name
        self.bootstrap = broker.bootstrap_servers
        self.topic = new_topic(self.bootstrap, name, 1)
        self.input = root / f"{name}-in"
        drop_parquet(self.input, rows, schema)

    def files_to_kafka(self, converters: Mapping[str, str]) -> dict[str, str]:
        return {
            "connector.class": "files-to-kafka",
            "input.path": str(self.input),
            "input.format": "parquet",
            "kafka.bootstrap.servers": self.bootstrap,
            "topic": self.topic,
            **converters,
        }

    def kafka_to_files(self, output: Path, converters: Mapping[str, str]) -> dict[str, str]:
        return {
            "connector.class": "kafka-to-files",
            "kafka.bootstrap.servers": self.bootstrap,
            "topics": self.topic,
            "output.path": str(output),
            "transform.sql": "SELECT key, value FROM source",
            **converters,
        }


def test_a_round_trip_per_converter(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    typed = typed_rows()
    blobs = [{"payload": bytes([n, 0, 255, n])} for n in range(ROWS)]
    lines = [{"line": f"line {n}: ünïcode"} for n in range(ROWS)]
    trips = {
        "bytes": RoundTrip("bytes", broker, tmp_path, blobs, pa.schema([("payload", pa.binary())])),
        "string": RoundTrip("string", broker, tmp_path, lines, pa.schema([("line", pa.string())])),
        "envelope": RoundTrip("envelope", broker, tmp_path, typed, TYPED),
        "plain": RoundTrip("plain", broker, tmp_path, typed, TYPED),
        "avro": RoundTrip("avro", broker, tmp_path, typed, TYPED.remove(4).remove(3)),
    }
    bytes_both = {"key.converter": "bytes", "value.converter": "bytes"}
    json_key = {"key.converter": "json", "key.converter.schemas.enable": "false"}
    avro = {
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.avro.schema": AVRO_VALUE,
        "value.converter.avro.schema.id": "42",
        "key.converter": "avro",
        "key.converter.avro.schema": '"long"',
        "key.converter.avro.wire.format": "plain",
    }
    plain_json = {"value.converter": "json", "value.converter.schemas.enable": "false"}
    sources = {
        "bytes": trips["bytes"].files_to_kafka({**bytes_both, "key.field": "payload"}),
        "string": trips["string"].files_to_kafka(
            {"value.converter": "string", "key.field": "line"}
        ),
        "envelope": trips["envelope"].files_to_kafka(
            {"value.converter": "json", **json_key, "key.field": "id"}
        ),
        # No converter named: as before converters, the row as plain JSON, the key a string.
        "plain": trips["plain"].files_to_kafka({"key.field": "id"}),
        "avro": trips["avro"].files_to_kafka({**avro, "key.field": "id"}),
    }
    every_value = "SELECT key, value.* FROM source"
    outputs = {name: tmp_path / f"{name}-out" for name in [*trips, "inferred"]}
    sinks = {
        "bytes": trips["bytes"].kafka_to_files(outputs["bytes"], bytes_both),
        "string": trips["string"].kafka_to_files(
            outputs["string"], {"key.converter": "string", "value.converter": STRING_CONVERTER}
        ),
        "envelope": trips["envelope"].kafka_to_files(
            outputs["envelope"],
            {
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                **json_key,
                "key.schema": "BIGINT",
                "transform.sql": every_value,
            },
        ),
        # The key converter is the worker's (string).
        "plain": trips["plain"].kafka_to_files(
            outputs["plain"],
            {**plain_json, "value.schema": TYPED_DDL, "transform.sql": every_value},
        ),
        "inferred": trips["plain"].kafka_to_files(
            outputs["inferred"],
            {
                **plain_json,
                "transform.sql": "SELECT value.id AS id, value.name AS name FROM source",
            },
        ),
        "avro": trips["avro"].kafka_to_files(
            outputs["avro"],
            {**avro, "transform.sql": every_value},
        ),
    }
    api = Api(worker.url, timeout_s=240)
    for name, config in sources.items():
        api.call("PUT", f"/connectors/{name}/config", 201, json=config)
    for name, trip in trips.items():
        # Before the sinks start: a json type is inferred from what is there at start.
        wait_until(
            partial(read_topic, broker.bootstrap_servers, trip.topic),
            240,
            what=f"{name}: every row in Kafka",
            until=lambda records: len(records) >= ROWS,
        )
    for name, config in sinks.items():
        api.call("PUT", f"/connectors/{name}-back/config", 201, json=config)
    for name in outputs:
        wait_until(
            partial(written, outputs[name]),
            240,
            what=f"{name}: every row back",
            until=lambda rows: len(rows) >= ROWS,
        )
    statuses = {name: api.status(name) for name in [*sources, *(f"{n}-back" for n in sinks)]}
    for name in statuses:
        api.call("DELETE", f"/connectors/{name}", 204)

    failed = {n: s["tasks"] for n, s in statuses.items() if s["tasks"][0]["state"] != "RUNNING"}
    assert not failed
    back = {name: sorted(written(path), key=str) for name, path in outputs.items()}

    assert sorted(r["value"] for r in back["bytes"]) == sorted(b["payload"] for b in blobs)
    assert all(r["key"] == r["value"] for r in back["bytes"])
    assert sorted(r["value"] for r in back["string"]) == sorted(r["line"] for r in lines)
    assert all(r["key"] == r["value"] for r in back["string"])
    for name in ("envelope", "plain"):
        assert sorted(back[name], key=lambda r: r["id"]) == [
            {"key": row["id"] if name == "envelope" else str(row["id"]), **row} for row in typed
        ], name
    assert sorted(back["inferred"], key=lambda r: r["id"]) == [
        {"id": row["id"], "name": row["name"]} for row in typed
    ]
    assert sorted(back["avro"], key=lambda r: r["id"]) == [
        {"key": row["id"], "id": row["id"], "name": row["name"], "day": row["day"]} for row in typed
    ]


def test_a_record_that_cannot_be_converted_fails_its_task_naming_where_it_is(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """And bad converter configs are refused before they are stored, naming the key."""
    topic = new_topic(broker.bootstrap_servers, "poison", 1)
    produce(
        broker.bootstrap_servers,
        topic,
        [Outgoing(None, b'{"id": 1}'), Outgoing(None, b'{"id": "one"}')],
    )
    config = {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(tmp_path / "out"),
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "value.schema": "id LONG",
        "transform.sql": "SELECT value.id FROM source",
    }
    incoming = tmp_path / "in"
    incoming.mkdir()
    source = {
        "connector.class": "files-to-kafka",
        "input.path": str(incoming),
        "input.schema": "a INT, b STRING",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topic": topic,
    }
    not_json = {k: v for k, v in config.items() if k.startswith("value.") is False}
    refused = {
        "value.converter": {**config, "value.converter": "com.example.ProtobufConverter"},
        "value.converter.avro.schema": {
            **not_json,
            "value.converter": "avro",
            "value.converter.avro.schema": '{"type": "record", "name": "R"}',
        },
        "value.schema": {**config, "value.schema": "id LONG,,"},
        "transform.sql": {**config, "transform.sql": "SELECT value.nope FROM source"},
        "value.converter.schemas.enable": {
            **not_json,
            "value.converter": "string",
            "value.converter.schemas.enable": "true",
        },
        "files:value.converter": {**source, "value.converter": "string"},
        "files:value.converter.avro.schema.id": {
            **source,
            "value.converter": "avro",
            "value.converter.avro.schema": AVRO_VALUE,
        },
    }
    api = Api(worker.url, timeout_s=180)
    for key, bad in refused.items():
        answer = api.call("PUT", "/connectors/bad/config", 400, json=bad)
        assert answer.json()["message"].count(f"{key.removeprefix('files:')}:") == 1, (
            key,
            answer.text,
        )
    api.call("PUT", "/connectors/poison/config", 201, json=config)
    status = api.wait_states("poison", "RUNNING", ["FAILED"])
    assert f"topic {topic}, partition 0, offset 1 " in status["tasks"][0]["trace"]
