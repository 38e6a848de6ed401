"""`transform.sql`, `value.schema` and `input.schema` that Spark accepts but the worker's
own checks could not judge, against one real worker (real broker, real Spark).

Each probe once ended in a 500 or a hang: `NOT` a thousand times ran the parsed-plan walk
out of Python's stack; nested subqueries made it walk each subquery twice per level;
nested `CASE`s made Spark's JSON of the analysed plan (and, for a simple `CASE`, the
analyzer itself) double per level until the JVM's heap was full; CTEs and `WINDOW`s
named many times made the analyzer copy them out for hours; a query whose output
nests 250 structs ran pyspark's reading of the schema out of the stack; a `value.schema`
whose comment holds a backslash, or that names `CHAR(3)`, failed the view the query is
analysed against; and `files-to-kafka` stored a 300-level `input.schema`. Each is now a
clean validation or an error on its key, within a bound, and the worker answers after.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.processes import WorkerProcess, ready_worker
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

ANSWER_WITHIN_S = 180.0
"""A bound on one answer, so that a probe that hangs fails instead of holding the run:
each takes seconds now, and before, the nested ones ran for hours or filled the heap."""
SQL_KEY = "transform.sql"
TOO_COMPLEX = f"{SQL_KEY}: too complex: its plan has more than 100000 expressions and operators"


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("deep-sql")
    with ready_worker("deep-sql", broker.bootstrap_servers, root) as started:
        yield started


def sink(broker: EmbeddedBroker, output: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": "deep-sql",
        "output.path": str(output),
        **extra,
    }


def validation_errors(worker: WorkerProcess, config: dict[str, str]) -> list[str]:
    """Each error of `/config/validate` as `key: message`; fails on any answer but 200,
    or on none within `ANSWER_WITHIN_S`."""
    path = f"/connector-plugins/{config['connector.class']}/config/validate"
    answer = httpx.put(worker.url + path, json=config, timeout=ANSWER_WITHIN_S)
    assert answer.status_code == 200, f"{answer.status_code} {answer.text[:2000]}"
    return [
        f"{entry['value']['name']}: {error}"
        for entry in answer.json()["configs"]
        for error in entry["value"]["errors"]
    ]


def alive(worker: WorkerProcess) -> None:
    Api(worker.url).call("GET", "/", 200)


def created_or_refused(worker: WorkerProcess, name: str, config: dict[str, Any]) -> int:
    """POST the connector (deleting it again if it was created): 201 or 400, never 500."""
    body = {"name": name, "config": config, "initial_state": "STOPPED"}
    answer = httpx.post(f"{worker.url}/connectors", json=body, timeout=ANSWER_WITHIN_S)
    assert answer.status_code in (201, 400), f"{answer.status_code} {answer.text[:2000]}"
    if answer.status_code == 201:
        Api(worker.url).call("DELETE", f"/connectors/{name}", 204)
    return answer.status_code


def nots(count: int) -> str:
    return "SELECT key FROM source WHERE " + "NOT " * count + "true"


def nested_case(levels: int, simple: bool) -> str:
    """A simple `CASE x WHEN ...` uses `x` in each branch; a searched one does not."""
    value = "offset"
    for _ in range(levels):
        value = (
            f"CASE {value} WHEN 1 THEN 1 WHEN 2 THEN 2 END"
            if simple
            else f"CASE WHEN ({value}) = 1 THEN 1 ELSE 2 END"
        )
    return f"SELECT {value} AS s FROM source"


def test_not_a_thousand_times_is_judged_never_a_500(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """Spark's parser takes more nested `NOT`s once its code is compiled, so they climb;
    whatever depth its parser or analyzer gives up at is an error on the key that says
    so, and every depth it takes validates clean."""
    config = sink(broker, tmp_path / "out")
    clean = []
    for count in range(100, 1700, 100):
        errors = validation_errors(worker, {**config, SQL_KEY: nots(count)})
        assert all(error.startswith(f"{SQL_KEY}: ") for error in errors), errors
        assert all("too complex" in e or "too deeply nested" in e for e in errors), errors
        if not errors:
            clean.append(count)
    assert 1000 in clean, clean
    assert created_or_refused(worker, "nots", {**config, SQL_KEY: nots(1000)}) == 201
    alive(worker)


def test_nested_subqueries_are_judged_once_each(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """Each level's subquery was walked twice, through its expression and through the
    operator's inner children: 2^30 walks."""
    sql = "SELECT " + "(SELECT " * 30 + "1" + ")" * 30 + " AS s, offset FROM source"
    assert validation_errors(worker, {**sink(broker, tmp_path / "out"), SQL_KEY: sql}) == []
    alive(worker)


def test_nested_case_expressions_neither_hang_nor_fill_the_heap(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """Thirty searched `CASE`s are a plain query; thirty simple ones would expand to
    2^30 copies of their innermost key in Spark's analyzer, and are refused first."""
    config = sink(broker, tmp_path / "out")
    assert validation_errors(worker, {**config, SQL_KEY: nested_case(30, simple=False)}) == []
    assert validation_errors(worker, {**config, SQL_KEY: nested_case(8, simple=True)}) == []
    errors = validation_errors(worker, {**config, SQL_KEY: nested_case(30, simple=True)})
    assert len(errors) == 1 and errors[0].startswith(TOO_COMPLEX), errors
    assert created_or_refused(worker, "cases", {**config, SQL_KEY: nested_case(30, True)}) == 400
    alive(worker)


def test_ctes_and_windows_count_once_per_use(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """Spark copies a CTE or a `WINDOW` into each place that names it: thirty CTEs each
    reading the one before twice kept its analyzer busy for hours, and a `WINDOW` of 600
    expressions used 600 times for minutes."""
    config = sink(broker, tmp_path / "out")

    def ctes(levels: int) -> str:
        parts = ["a0 AS (SELECT offset AS x FROM source)"]
        parts += [
            f"a{n} AS (SELECT * FROM a{n - 1} UNION ALL SELECT * FROM a{n - 1})"
            for n in range(1, levels + 1)
        ]
        return f"WITH {', '.join(parts)} SELECT x FROM a{levels}"

    def windows(expressions: int, uses: int) -> str:
        spec = ", ".join(f"offset + {n}" for n in range(expressions))
        calls = ", ".join(f"max(offset) OVER w AS m{n}" for n in range(uses))
        return f"SELECT {calls} FROM source WINDOW w AS (PARTITION BY {spec})"

    assert validation_errors(worker, {**config, SQL_KEY: ctes(4)}) == []
    assert validation_errors(worker, {**config, SQL_KEY: windows(10, 3)}) == []
    for sql in (ctes(30), windows(600, 600)):
        errors = validation_errors(worker, {**config, SQL_KEY: sql})
        assert len(errors) == 1 and errors[0].startswith(TOO_COMPLEX), errors
    alive(worker)


def test_an_output_nested_deeper_than_a_payload_is_an_error_on_the_query(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """250 levels ran pyspark's reading of the output schema out of the stack where
    Spark's parser took them (once its code is compiled; before, it gives up itself)."""
    config = sink(broker, tmp_path / "out")

    def structs(levels: int) -> str:
        return "SELECT " + "struct(" * levels + "offset" + ")" * levels + " AS s FROM source"

    bound = (
        f"{SQL_KEY}: its output nests more than 101 levels deep (each STRUCT<...>, "
        "ARRAY<...> or MAP<...> of a column is a level)"
    )
    assert validation_errors(worker, {**config, SQL_KEY: structs(101)}) == []
    assert validation_errors(worker, {**config, SQL_KEY: structs(102)}) == [bound]
    errors = validation_errors(worker, {**config, SQL_KEY: structs(250)})
    assert errors == [bound] or (len(errors) == 1 and "TOO_COMPLEX" in errors[0]), errors
    alive(worker)


@pytest.mark.parametrize(
    "schema",
    [
        r"id LONG COMMENT r'\'",
        r"id LONG COMMENT 'it\'s', name STRING COMMENT '\\'",
        r"nested STRUCT<id: LONG COMMENT 'a \\'>, id LONG",
    ],
)
def test_a_value_schema_comment_with_a_backslash_is_analysed(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path, schema: str
) -> None:
    """Spark's `toDDL` wrote such a comment back unescaped, and the view's DDL did not
    parse; the query is analysed against the schema itself now."""
    json_values = {"value.converter": "json", "value.converter.schemas.enable": "false"}
    config = sink(broker, tmp_path / "out", **json_values, **{"value.schema": schema})
    assert validation_errors(worker, config) == []
    assert validation_errors(worker, {**config, SQL_KEY: "SELECT value.id FROM source"}) == []
    errors = validation_errors(worker, {**config, SQL_KEY: "SELECT value.nope FROM source"})
    assert len(errors) == 1 and errors[0].startswith(f"{SQL_KEY}: "), errors
    assert created_or_refused(worker, "commented", config) == 201
    alive(worker)


def test_a_value_schema_spark_cannot_read_json_into_is_an_error_on_its_key(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    """The task's `from_json` refuses CHAR and VARCHAR, so its start would fail."""
    json_values = {"value.converter": "json", "value.converter.schemas.enable": "false"}
    for schema in ("code CHAR(3)", "id LONG, tags ARRAY<VARCHAR(8)>"):
        config = sink(broker, tmp_path / "out", **json_values, **{"value.schema": schema})
        errors = validation_errors(worker, config)
        assert len(errors) == 1, errors
        assert errors[0].startswith("value.schema: not readable as JSON: "), errors
        assert "CHAR" in errors[0], errors
        assert created_or_refused(worker, "chars", config) == 400
    alive(worker)


def test_a_deep_input_schema_is_refused_naming_the_key(
    broker: EmbeddedBroker, worker: WorkerProcess, tmp_path: Path
) -> None:
    (tmp_path / "in").mkdir()
    config = {
        "connector.class": "files-to-kafka",
        "input.path": str(tmp_path / "in"),
        "topic": "deep-input",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
    }

    def structs(levels: int) -> str:
        return "a " + "STRUCT<b: " * levels + "INT" + ">" * levels

    assert validation_errors(worker, {**config, "input.schema": structs(100)}) == []
    bound = "input.schema: nested more than 100 levels deep (each <...> is a level)"
    assert validation_errors(worker, {**config, "input.schema": structs(101)}) == [bound]
    body = {"name": "deep-input", "config": {**config, "input.schema": structs(300)}}
    answer = httpx.post(f"{worker.url}/connectors", json=body, timeout=ANSWER_WITHIN_S)
    assert answer.status_code == 400, answer.text
    assert bound in answer.json()["message"]
    alive(worker)
