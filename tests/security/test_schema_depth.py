"""Schemas and bodies nested too deep, against one real worker (real broker, real Spark).

Each probe once reached a recursive walk in the worker: a 900-level Avro schema made
`/config/validate` answer 500, 60,000 brackets made create answer 500, a deep DDL was a
400 saying only "maximum recursion depth exceeded", a record's deep envelope schema
failed its task with a RecursionError, and a deep body was "an error parsing the body".
Now each is a 400 (or, from data, a task failure) naming the key and the bound, the
deepest allowed schema still works, and the worker answers after every probe.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.kafka_topics import new_topic, produce
from tests.support.processes import WorkerProcess, ready_worker
from tests.support.rest_client import Api
from worker.kafka.client import Outgoing
from worker.records.converters.payload_types import SAMPLE_RECORDS

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

MAX_NESTING = 100
"""The documented bound, as a caller reads it in the messages."""
BOUND = f"nested more than {MAX_NESTING} levels deep"
JSON_LEVELS = "each JSON object or array is a level"
DDL_LEVELS = "each <...> is a level"
AVRO_KEY = "value.converter.avro.schema"


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("schema-depth")
    with ready_worker("schema-depth", broker.bootstrap_servers, root) as started:
        yield started


def avro_arrays(levels: int) -> str:
    return '{"type": "array", "items": ' * levels + '"int"' + "}" * levels


def ddl_structs(levels: int, filler: str = "") -> str:
    return "a " + f"STRUCT<{filler}b: " * levels + "INT" + ">" * levels


def envelope_arrays(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "int32", "optional": True}
    for _ in range(levels - 1):
        schema = {"type": "array", "items": schema, "optional": True}
    return schema


def sink(broker: EmbeddedBroker, topic: str, output: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(output),
        **extra,
    }


def validation_errors(api: Api, config: dict[str, str]) -> list[str]:
    """Each error of `/config/validate` as `key: message`: a key the plugin does not
    define (a converter's own setting) has its errors under `connector.class`, already
    named so."""
    plugin = config["connector.class"]
    answer = api.call("PUT", f"/connector-plugins/{plugin}/config/validate", 200, json=config)
    return [
        error
        if entry["value"]["name"] == "connector.class"
        else f"{entry['value']['name']}: {error}"
        for entry in answer.json()["configs"]
        for error in entry["value"]["errors"]
    ]


def refused(api: Api, method: str, path: str, **kwargs: Any) -> str:
    answer = api.call(method, path, 400, **kwargs)
    message: str = answer.json()["message"]
    return message


def alive(api: Api) -> None:
    api.call("GET", "/", 200)


def test_a_900_level_avro_schema_is_an_error_on_its_key_never_a_500(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    api = Api(worker.url)
    plain = {"value.converter": "avro", "value.converter.avro.wire.format": "plain"}
    config = sink(broker, "avro-depth", tmp_path / "out", **plain, **{AVRO_KEY: '"long"'})
    assert validation_errors(api, {**config, AVRO_KEY: avro_arrays(MAX_NESTING)}) == []
    for schema in (avro_arrays(900), "[" * 60_000):
        deep = {**config, AVRO_KEY: schema}
        assert validation_errors(api, deep) == [f"{AVRO_KEY}: {BOUND} ({JSON_LEVELS})"]
        body = {"name": "avro-depth", "config": deep}
        assert f"{AVRO_KEY}: {BOUND}" in refused(api, "POST", "/connectors", json=body)
        alive(api)
    api.call("PUT", "/connectors/avro-depth/config", 201, json=config)
    try:
        deep = {**config, AVRO_KEY: avro_arrays(900)}
        message = refused(api, "PUT", "/connectors/avro-depth/config", json=deep)
        assert f"{AVRO_KEY}: {BOUND}" in message
        stored = api.call("GET", "/connectors/avro-depth/config", 200).json()
        assert stored[AVRO_KEY] == '"long"'
    finally:
        api.call("DELETE", "/connectors/avro-depth", 204)
    alive(api)


def test_a_deep_ddl_is_a_400_naming_the_key_however_its_text_hides_the_levels(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """A `>` inside a comment, a string or a quoted name is no level to Spark, so it may
    not lower the count either; the fillers are DDL Spark takes."""
    api = Api(worker.url)
    config = sink(broker, "ddl-depth", tmp_path / "out", **{"value.converter": "json"})
    fillers = [
        "",
        "/* > */ ",
        "-- >\n",
        "x INT COMMENT '>', ",
        "`>` INT, ",
    ]
    for filler in fillers:
        deepest = {**config, "value.schema": ddl_structs(MAX_NESTING, filler)}
        assert validation_errors(api, deepest) == [], filler
        deep = {**config, "value.schema": ddl_structs(MAX_NESTING + 1, filler)}
        assert validation_errors(api, deep) == [f"value.schema: {BOUND} ({DDL_LEVELS})"], filler
    body = {"name": "ddl-depth", "config": {**config, "value.schema": ddl_structs(300)}}
    assert f"value.schema: {BOUND}" in refused(api, "POST", "/connectors", json=body)
    alive(api)


def test_a_deeply_nested_body_is_a_400_on_any_route(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    api = Api(worker.url)
    headers = {"content-type": "application/json"}
    config = sink(broker, "body-depth", tmp_path / "out")
    brackets = '{"name": "body-depth", "config": {"topics": ' + "[" * 100_000 + "}}"
    message = refused(api, "POST", "/connectors", content=brackets, headers=headers)
    assert message.startswith(f"Request body {BOUND}")
    validate = '{"topics": ' + "[" * 100_000 + "}"
    path = "/connector-plugins/kafka-to-files/config/validate"
    assert BOUND in refused(api, "PUT", path, content=validate, headers=headers)
    created = {"name": "body-depth", "config": config, "initial_state": "STOPPED"}
    api.call("POST", "/connectors", 201, json=created)
    try:
        offset: Any = {"orders": {"0": 1}}
        for _ in range(900):
            offset = {"o": offset}
        body = {"offsets": [{"partition": {"task": 0}, "offset": offset}]}
        text = json.dumps(body)
        assert BOUND in refused(api, "PATCH", "/connectors/body-depth/offsets", content=text)
    finally:
        api.call("DELETE", "/connectors/body-depth", 204)
    alive(api)


def test_a_record_whose_envelope_schema_is_too_deep_fails_its_task_naming_why(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """A schema from data is known only when the task starts: the task fails, saying
    which converter and what bound, and the worker goes on. A later record too deep for
    the JSON parser (past the records the type is inferred from) is one record that
    cannot be converted, as `errors.tolerance` says."""
    api = Api(worker.url, timeout_s=240)
    envelope = {"schema": envelope_arrays(900), "payload": None}
    deep_first = new_topic(broker.bootstrap_servers, "deep-envelope", 1)
    produce(broker.bootstrap_servers, deep_first, [Outgoing(None, json.dumps(envelope).encode())])
    good = json.dumps({"schema": {"type": "int32", "optional": False}, "payload": 7}).encode()
    deep_later = new_topic(broker.bootstrap_servers, "deep-record", 1)
    too_deep = '{"schema": {"type": "int32"}, "payload": ' + "[" * 1500 + "]" * 1500 + "}"
    records = [*[good] * SAMPLE_RECORDS, too_deep.encode()]
    produce(broker.bootstrap_servers, deep_later, [Outgoing(None, r) for r in records])
    envelopes = {"value.converter": "json", "value.converter.schemas.enable": "true"}
    connectors = {
        "deep-envelope": sink(broker, deep_first, tmp_path / "first", **envelopes),
        "deep-record": sink(broker, deep_later, tmp_path / "later", **envelopes),
    }
    try:
        for name, config in connectors.items():
            api.call("POST", "/connectors", 201, json={"name": name, "config": config})
        trace = api.wait_states("deep-envelope", "RUNNING", ["FAILED"])["tasks"][0]["trace"]
        assert f"value.converter: the records' envelope schema: {BOUND}" in trace
        assert "RecursionError" not in trace
        trace = api.wait_states("deep-record", "RUNNING", ["FAILED"])["tasks"][0]["trace"]
        where = f"topic {deep_later}, partition 0, offset {SAMPLE_RECORDS} (errors.tolerance=none)"
        assert where in trace
    finally:
        for name in connectors:
            httpx.delete(f"{worker.url}/connectors/{name}", timeout=60)
    alive(api)
