"""jdbc-to-kafka's pure parts: marks as Spark offsets, timestamps as microseconds, the
split of tables over tasks, names, queries, column checks and the config's 400s."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.connectors.jdbc.jdbc_to_kafka import (
    TABLES_KEY,
    CheckpointTablesError,
    JdbcToKafkaConnector,
    check_checkpoint_tables,
)
from worker.connectors.jdbc.positions import (
    Mark,
    Mode,
    PositionError,
    TableNameError,
    instant,
    mark_from_key,
    mark_of,
    micros,
    offset_of,
    parse_table,
    split_tables,
)
from worker.connectors.jdbc.queries import (
    Column,
    ColumnsError,
    QueryTextError,
    TableQueries,
    check_query,
    columns_of,
    spark_type,
)
from worker.plugins.api import ConnectorConfigError
from worker.runtime.task_offsets import MAX_POSITION, check_offset

MODES: tuple[Mode, ...] = ("incrementing", "timestamp", "timestamp+incrementing")
positions = st.integers(0, MAX_POSITION)


@given(st.sampled_from(MODES), positions, positions)
def test_a_mark_is_a_spark_offset_and_back(mode: Mode, stamp: int, number: int) -> None:
    mark = Mark(
        stamp if mode != "incrementing" else 0,
        number if mode != "timestamp" else 0,
    )
    offset = offset_of("orders", mode, mark)
    check_offset(offset)
    assert mark_of(offset, "orders", mode) == mark


def test_the_offsets_shapes() -> None:
    assert offset_of("t", "incrementing", None) == {"t": {}}
    assert mark_of({"t": {}}, "t", "timestamp") is None
    assert offset_of("t", "timestamp+incrementing", Mark(5, 7)) == {
        "t": {"timestamp_us": 5, "incrementing": 7}
    }
    assert offset_of("t", "timestamp", Mark(5, 7)) == {"t": {"timestamp_us": 5}}


@pytest.mark.parametrize(
    ("offset", "mode", "message"),
    [
        ({"other": {}}, "incrementing", "not one of table 't'"),
        ({"t": {}, "u": {}}, "incrementing", "not one of table 't'"),
        ({"t": 3}, "incrementing", "must be a JSON object"),
        ({"t": {"incrementing": -1}}, "incrementing", '"incrementing": <0..'),
        ({"t": {"incrementing": True}}, "incrementing", "in mode incrementing"),
        ({"t": {"timestamp_us": 1}}, "timestamp+incrementing", "must be {} or"),
        ({"t": {"incrementing": 1}}, "timestamp", '"timestamp_us"'),
        ({"t": {"incrementing": 1, "extra": 2}}, "incrementing", "not {"),
    ],
)
def test_an_offset_of_another_shape_is_refused(
    offset: dict[str, object], mode: Mode, message: str
) -> None:
    with pytest.raises(PositionError) as raised:
        mark_of(offset, "t", mode)
    assert message in str(raised.value)


@given(st.integers(0, 2**62))
def test_microseconds_are_exact(stamp: int) -> None:
    if stamp > micros(datetime(9999, 12, 31, tzinfo=UTC)):
        return
    assert micros(instant(stamp)) == stamp


def test_a_timestamp_without_zone_is_utc_and_a_date_its_midnight() -> None:
    aware = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert micros(aware.replace(tzinfo=None)) == micros(aware)
    elsewhere = aware.astimezone(timezone(timedelta(hours=5)))
    assert micros(elsewhere) == micros(aware)
    assert micros(date(1970, 1, 2)) == 86_400 * 10**6
    assert instant(1) == datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)


def test_a_mark_from_a_rows_order_key() -> None:
    stamp = datetime(2024, 1, 1, tzinfo=UTC)
    assert mark_from_key("incrementing", (41,)) == Mark(incrementing=41)
    assert mark_from_key("timestamp", (stamp,)) == Mark(timestamp_us=micros(stamp))
    assert mark_from_key("timestamp+incrementing", (stamp, 3)) == Mark(micros(stamp), 3)
    with pytest.raises(TypeError, match="not an integer"):
        mark_from_key("incrementing", ("41",))
    with pytest.raises(TypeError, match="not a timestamp"):
        mark_from_key("timestamp", (41,))


@given(st.lists(st.text(min_size=1), unique=True, max_size=30), st.integers(1, 10))
def test_each_table_goes_to_one_task_and_no_task_is_empty(tables: list[str], tasks: int) -> None:
    split = split_tables(tables, tasks)
    assert sorted(t for group in split for t in group) == sorted(tables)
    assert len(split) == max(1, min(tasks, len(tables)))
    assert all(split) or not tables


def test_table_names() -> None:
    assert parse_table("orders") == ("orders",)
    assert parse_table("Sales.Orders") == ("Sales", "Orders")
    assert parse_table('odd "name"') == ('odd "name"',)
    for bad in ("a.b.c", ".orders", "orders.", ""):
        with pytest.raises(TableNameError):
            parse_table(bad)


def test_a_query_is_one_statement() -> None:
    assert check_query("  SELECT 1 AS id ;  ") == "SELECT 1 AS id"
    with pytest.raises(QueryTextError, match="without ';'"):
        check_query("SELECT 1; DROP TABLE t")
    with pytest.raises(QueryTextError, match="empty"):
        check_query(" ; ")


def test_spark_types_of_postgres_columns() -> None:
    assert spark_type(20, None, None) == "BIGINT"
    assert spark_type(1184, None, None) == "TIMESTAMP"
    assert spark_type(1114, None, None) == "TIMESTAMP"  # the UTC instant it names
    assert spark_type(1700, 10, 2) == "DECIMAL(10,2)"
    assert spark_type(1700, None, None) is None  # unbounded numeric: its text
    assert spark_type(3802, None, None) is None  # jsonb: its text


QUERIES = TableQueries(("t",), "timestamp+incrementing", "id", ("changed",))


def test_columns_the_mode_needs() -> None:
    described = [("id", 20, None, None), ("changed", 1184, None, None), ("doc", 3802, None, None)]
    assert columns_of("t", described, QUERIES, None) == (
        Column("id", "BIGINT"),
        Column("changed", "TIMESTAMP"),
        Column("doc", "STRING", as_text=True),
    )
    with pytest.raises(ColumnsError, match="has no column 'id'"):
        columns_of("t", described[1:], QUERIES, None)
    with pytest.raises(ColumnsError, match="must be smallint, integer or bigint"):
        columns_of("t", [("id", 25, None, None), described[1]], QUERIES, None)
    with pytest.raises(ColumnsError, match="must be timestamp"):
        columns_of("t", [described[0], ("changed", 20, None, None)], QUERIES, None)
    with pytest.raises(ColumnsError, match=r"key\.field"):
        columns_of("t", described, QUERIES, "missing")
    with pytest.raises(ColumnsError, match="two columns of one name"):
        columns_of("t", [*described, described[0]], QUERIES, None)


BASE = {
    "connection.url": "jdbc:postgresql://db:5432/shop",
    "connection.password": "s3cret-pw",
    "kafka.bootstrap.servers": "k:9092",
    "topic.prefix": "pg-",
    "mode": "incrementing",
    "incrementing.column.name": "id",
}


def problems(config: dict[str, str]) -> str:
    with pytest.raises(ConnectorConfigError) as raised:
        JdbcToKafkaConnector().validate(config)
    assert "s3cret-pw" not in str(raised.value)
    return str(raised.value)


def test_configs_refused_with_a_reason() -> None:
    assert "exactly one of table.whitelist and query" in problems(BASE)
    both = {**BASE, "table.whitelist": "a", "query": "SELECT 1 AS id"}
    assert "exactly one of table.whitelist and query" in problems(both)
    assert "timestamp.column.name" in problems(
        {**BASE, "table.whitelist": "a", "mode": "timestamp"}
    )
    assert "mode" in problems({**BASE, "table.whitelist": "a", "mode": "bulk"})
    assert "names a table twice" in problems({**BASE, "table.whitelist": "a, a"})
    assert "no Kafka topic name" in problems({**BASE, "table.whitelist": "a b"})
    assert "without ';'" in problems({**BASE, "query": "SELECT 1; SELECT 2"})
    assert "errors.deadletterqueue" in problems(
        {**BASE, "table.whitelist": "a", "errors.deadletterqueue.topic.name": "dlq"}
    )
    JdbcToKafkaConnector().validate({**BASE, "table.whitelist": "a, s.b"})


def test_tables_split_into_task_configs() -> None:
    connector = JdbcToKafkaConnector()
    configs = connector.task_configs({**BASE, "table.whitelist": "a, b, c"}, 2)
    assert [c[TABLES_KEY] for c in configs] == ['["a", "c"]', '["b"]']
    [single] = connector.task_configs({**BASE, "query": "SELECT 1 AS id"}, 4)
    assert single[TABLES_KEY] == '["query"]'


def test_a_checkpoint_of_other_tables_is_refused(tmp_path: Path) -> None:
    """As Spark writes a batch of a query of two sources, and commits it."""
    check_checkpoint_tables(tmp_path, 0, ["a", "b"])  # no checkpoint yet
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    (tmp_path / "offsets" / "0").write_text(
        'v1\n{"batchWatermarkMs":0}\n{"a":{"incrementing":4}}\n{"b":{}}'
    )
    (tmp_path / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    check_checkpoint_tables(tmp_path, 0, ["a", "b"])
    for changed in (["a", "c"], ["b", "a"], ["a"], ["a", "b", "c"]):
        with pytest.raises(CheckpointTablesError, match=r"holds the marks of \['a', 'b'\]"):
            check_checkpoint_tables(tmp_path, 0, changed)
