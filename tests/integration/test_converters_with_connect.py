"""Connect's JsonConverter and a real worker on a real broker, once each way: records
Connect's own converter wrote (a Debezium- or JDBC-source-like row: a float64, a float32,
a base64 decimal, a date, a timestamp) go through `kafka-to-files` into parquet as the
values Connect was given; and what `files-to-kafka` writes with the json converter and
its envelope, Connect's converter reads (`toConnectData`) without a DataException, to the
values of the input rows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.connect_oracle import ConnectOracle
from tests.support.converter_corpus import float32
from tests.support.file_sink import committed_files
from tests.support.kafka_topics import new_topic, produce, read_topic
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, ready_worker
from tests.support.rest_client import Api
from worker.kafka.client import Outgoing

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

JSON: Final = "org.apache.kafka.connect.json.JsonConverter"
ROWS: Final = 12
TIMEOUT_S: Final = 240
SCHEMA: Final = {
    "type": "struct",
    "name": "shop.public.orders.Value",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "price", "type": "double", "optional": True},
        {"field": "ratio", "type": "float", "optional": True},
        {
            "field": "amount",
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "optional": True,
        },
        {
            "field": "day",
            "type": "int32",
            "name": "org.apache.kafka.connect.data.Date",
            "version": 1,
            "optional": True,
        },
        {
            "field": "at",
            "type": "int64",
            "name": "org.apache.kafka.connect.data.Timestamp",
            "version": 1,
            "optional": True,
        },
    ],
}
KEY: Final = {"type": "int64", "optional": False}
ARROW: Final = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("price", pa.float64()),
        ("ratio", pa.float32()),
        ("amount", pa.decimal128(10, 2)),
        ("day", pa.date32()),
        ("at", pa.timestamp("ms", tz="UTC")),
    ]
)


def rows() -> list[dict[str, Any]]:
    return [
        {
            "id": n,
            "price": -0.0 if n == 0 else n * 1.1e300 / ROWS,
            "ratio": float32(n / 3),
            "amount": None if n == 5 else Decimal(n * 10_001 - 60_000).scaleb(-2),
            "day": date(1969, 12, 31 - n),
            "at": datetime(2024, 1, 2, 3, 4, 5, n * 1000, UTC),
        }
        for n in range(ROWS)
    ]


@pytest.fixture(scope="module")
def oracle() -> Iterator[ConnectOracle]:
    with ConnectOracle.start() as started:
        yield started


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("converters-with-connect")
    with ready_worker("converters-with-connect", broker.bootstrap_servers, root) as started:
        yield started


def _written(output: Path) -> list[dict[str, Any]]:
    return [
        row
        for path in committed_files(output / "task-0")
        for row in pq.read_table(path).to_pylist()
    ]


def _done_or_failed(api: Api, name: str, output: Path) -> tuple[str, list[dict[str, Any]]]:
    return api.status(name)["tasks"][0]["state"], _written(output)


def test_kafka_to_files_reads_what_connects_json_converter_wrote(
    broker: EmbeddedBroker, worker: WorkerProcess, oracle: ConnectOracle, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "from-connect", 1)
    values = oracle.converter(JSON, {})
    keys = oracle.converter(JSON, {}, key=True)
    connects = [
        Outgoing(
            oracle.write(keys, topic, KEY, row["id"]), oracle.write(values, topic, SCHEMA, row)
        )
        for row in rows()
    ]
    produce(broker.bootstrap_servers, topic, connects)
    output = tmp_path / "out"
    config = {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(output),
        "key.converter": JSON,
        "value.converter": JSON,
        "transform.sql": "SELECT key, value.* FROM source",
    }
    api = Api(worker.url, timeout_s=TIMEOUT_S)
    api.call("PUT", "/connectors/from-connect/config", 201, json=config)
    state, written = wait_until(
        partial(_done_or_failed, api, "from-connect", output),
        TIMEOUT_S,
        what="every row in parquet, or a failed task",
        until=lambda found: found[0] == "FAILED" or len(found[1]) >= ROWS,
    )
    trace = api.status("from-connect")["tasks"][0].get("trace")
    api.call("DELETE", "/connectors/from-connect", 204)
    assert state == "RUNNING", trace
    by_id = sorted(written, key=lambda row: row["id"])
    assert [row.pop("key") for row in by_id] == [row["id"] for row in rows()]
    for row in by_id:
        row["at"] = row["at"].replace(tzinfo=UTC) if row["at"].tzinfo is None else row["at"]
    assert by_id == rows()


def test_connects_json_converter_reads_what_files_to_kafka_wrote(
    broker: EmbeddedBroker, worker: WorkerProcess, oracle: ConnectOracle, tmp_path: Path
) -> None:
    incoming = tmp_path / "in"
    incoming.mkdir()
    draft = tmp_path / ".rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows(), ARROW), draft)
    os.replace(draft, incoming / "rows.parquet")
    topic = new_topic(broker.bootstrap_servers, "to-connect", 1)
    config = {
        "connector.class": "files-to-kafka",
        "input.path": str(incoming),
        "input.format": "parquet",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topic": topic,
        "key.field": "id",
        "key.converter": JSON,
        "value.converter": JSON,
    }
    api = Api(worker.url, timeout_s=TIMEOUT_S)
    api.call("PUT", "/connectors/to-connect/config", 201, json=config)
    records = wait_until(
        partial(read_topic, broker.bootstrap_servers, topic),
        TIMEOUT_S,
        what="every row in Kafka",
        until=lambda found: len(found) >= ROWS,
    )
    api.call("DELETE", "/connectors/to-connect", 204)
    values = oracle.converter(JSON, {})
    keys = oracle.converter(JSON, {}, key=True)
    read = [
        (oracle.read(keys, topic, r.key)[1], oracle.read(values, topic, r.value)[1])
        for r in records
    ]
    assert sorted(read, key=lambda pair: str(pair[0]).zfill(3)) == [
        (row["id"], row) for row in rows()
    ]
