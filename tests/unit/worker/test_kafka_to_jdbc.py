"""kafka-to-jdbc without a database or Spark: its keys and the combinations refused,
hostile names quoted, table names from topics, the statements of each mode, the row
shapes and types a batch makes, which errors are a record's or may pass, and the search
for the rows at fault."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DecimalType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from worker.connectors.jdbc.failures import apply_in_parts, is_record_error, is_transient
from worker.connectors.jdbc.kafka_to_jdbc import KafkaToJdbcConnector, settings_of
from worker.connectors.jdbc.ledger import claim, create_ledger
from worker.connectors.jdbc.row_shape import (
    RowShapeError,
    SinkColumn,
    missing_columns,
    postgres_type,
    row_shape,
)
from worker.connectors.jdbc.sql import (
    IdentifierError,
    NewColumn,
    TableName,
    add_columns,
    apply_statements,
    create_table,
    quote,
    table_for,
)
from worker.connectors.jdbc.writer import latest_per_key
from worker.plugins.api import ConnectorConfigError, secret_keys

BASE = {
    "connector.class": "kafka-to-jdbc",
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "topics": "orders",
    "connection.url": "jdbc:postgresql://127.0.0.1:5432/shop",
    "connection.user": "u",
    "connection.password": "hunter2",
}
T = TableName("t")
S = TableName("s")


def test_defaults_are_confluent_s() -> None:
    settings, _ = settings_of(BASE)
    rules = settings.rules()
    assert (rules.table_name_format, rules.insert_mode, rules.pk_mode) == (
        "${topic}",
        "insert",
        "none",
    )
    assert (rules.auto_create, rules.auto_evolve, rules.delete_enabled) == (False, False, False)
    assert (rules.batch_size, rules.max_retries, rules.retry_backoff_ms) == (3000, 10, 3000)
    assert "connection.password" in secret_keys(KafkaToJdbcConnector.config_model)
    upper, _ = settings_of({**BASE, "insert.mode": "UPSERT", "pk.mode": "RECORD_KEY"})
    assert (upper.insert_mode, upper.pk_mode) == ("upsert", "record_key")


@pytest.mark.parametrize(
    ("extra", "key", "reason"),
    [
        ({"insert.mode": "upsert"}, "pk.mode", "set pk.mode to record_key or record_value"),
        ({"insert.mode": "update"}, "pk.mode", "writes by primary key"),
        ({"delete.enabled": "true"}, "delete.enabled", "needs pk.mode=record_key"),
        (
            {"delete.enabled": "true", "pk.mode": "record_value"},
            "delete.enabled",
            "pk.mode=record_value",
        ),
        ({"pk.fields": "id"}, "pk.fields", "only with pk.mode"),
        ({"pk.mode": "record_key", "pk.fields": "a,b,a"}, "pk.fields", "more than once"),
        ({"pk.mode": "kafka"}, "pk.mode", ""),
        ({"insert.mode": "merge"}, "insert.mode", ""),
        ({"table.name.format": "a.b.${topic}"}, "table.name.format", "more than one dot"),
        ({"table.name.format": "${topic}" + "x" * 60}, "table.name.format", "63 bytes"),
        ({"batch.size": "0"}, "batch.size", ""),
        ({"connection.url": "jdbc:mysql://h/d"}, "connection.url", "PostgreSQL"),
    ],
)
def test_combinations_refused_naming_the_key(extra: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConnectorConfigError) as refused:
        settings_of({**BASE, **extra})
    assert key in [p.key for p in refused.value.problems]
    assert reason in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_hostile_names_are_one_quoted_identifier() -> None:
    assert quote('x"; DROP TABLE t; --') == '"x""; DROP TABLE t; --"'
    assert quote("Odd--Name") == '"Odd--Name"'
    for bad in ("", "a\x00b", "é" * 32):
        with pytest.raises(IdentifierError):
            quote(bad)


def test_table_names_from_the_topic() -> None:
    assert table_for("${topic}", "a.b") == TableName("a.b")
    assert table_for("sales.${topic}_t", "eu") == TableName("eu_t", "sales")
    assert table_for("sales.${topic}", "o").sql() == '"sales"."o"'
    assert table_for("fixed", "o") == TableName("fixed")


def test_create_and_evolve_statements() -> None:
    columns = [NewColumn("id", "BIGINT", False), NewColumn("Item", "TEXT")]
    assert create_table(T, columns, ["id"]) == (
        'CREATE TABLE IF NOT EXISTS "t" ("id" BIGINT NOT NULL, "Item" TEXT, PRIMARY KEY ("id"))'
    )
    assert create_table(T, columns, []) == (
        'CREATE TABLE IF NOT EXISTS "t" ("id" BIGINT NOT NULL, "Item" TEXT)'
    )
    assert add_columns(T, [NewColumn("x", "JSONB")]) == (
        'ALTER TABLE "t" ADD COLUMN IF NOT EXISTS "x" JSONB'
    )


def test_upsert_keeps_each_key_s_latest_and_deletes_its_tombstones() -> None:
    statements = apply_statements("upsert", T, S, ["id"], ["id", "v"], deletes=True)
    latest = (
        '(SELECT DISTINCT ON ("id") "id", "v", "__sparkherd_tombstone" FROM "s" '
        'ORDER BY "id", "__sparkherd_seq" DESC) AS latest'
    )
    assert statements == [
        f'DELETE FROM "t" USING {latest} WHERE latest."__sparkherd_tombstone" AND '
        '"t"."id" = latest."id"',
        f'INSERT INTO "t" ("id", "v") SELECT "id", "v" FROM {latest} WHERE NOT '
        'latest."__sparkherd_tombstone" ON CONFLICT ("id") DO UPDATE SET "v" = EXCLUDED."v"',
    ]
    only_key = apply_statements("upsert", T, S, ["id"], ["id"], deletes=False)
    assert only_key[0].endswith('ON CONFLICT ("id") DO NOTHING')


def test_update_and_insert_statements() -> None:
    (update,) = apply_statements("update", T, S, ["a", "b"], ["a", "b", "v"], deletes=False)
    assert update.startswith('UPDATE "t" SET "v" = latest."v" FROM (SELECT DISTINCT ON ("a", "b")')
    assert update.endswith('AND "t"."a" = latest."a" AND "t"."b" = latest."b"')
    assert apply_statements("update", T, S, ["a"], ["a"], deletes=False) == []
    (insert,) = apply_statements("insert", T, S, [], ["v"], deletes=False)
    assert insert == (
        'INSERT INTO "t" ("v") SELECT "v" FROM "s" AS s WHERE NOT s."__sparkherd_tombstone" '
        'ORDER BY s."__sparkherd_seq"'
    )
    delete, insert = apply_statements("insert", T, S, ["id"], ["id", "v"], deletes=True)
    assert delete.startswith('DELETE FROM "t" USING (SELECT DISTINCT "id" FROM "s" WHERE')
    assert 'NOT EXISTS (SELECT 1 FROM "s" AS t WHERE t."__sparkherd_tombstone"' in insert


def test_the_ledger_is_keyed_by_query_and_batch() -> None:
    assert "PRIMARY KEY (query_id, batch_id)" in create_ledger()
    assert claim().endswith("ON CONFLICT (query_id, batch_id) DO NOTHING")


def record(key: DataType, value: DataType) -> StructType:
    return StructType(
        [
            StructField("key", key),
            StructField("value", value),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
        ]
    )


VALUE = StructType(
    [
        StructField("id", LongType(), False),
        StructField("name", StringType()),
        StructField("tags", ArrayType(StringType())),
        StructField("photo", BinaryType()),
    ]
)


def test_row_shapes_of_each_pk_mode() -> None:
    none = row_shape(record(StringType(), VALUE), "none", ())
    assert none.names == ["id", "name", "tags", "photo"]
    assert none.key == ()
    assert [c.new_column(False).sql() for c in none.columns] == [
        '"id" BIGINT NOT NULL',
        '"name" TEXT',
        '"tags" JSONB',
        '"photo" BYTEA',
    ]
    assert [c.encoding for c in none.columns] == ["plain", "plain", "json", "hex"]
    by_value = row_shape(record(StringType(), VALUE), "record_value", ("id",))
    assert by_value.key == ("id",)
    plain_key = row_shape(record(LongType(), VALUE), "record_key", ())
    assert plain_key.key == ("__connect_key",)
    assert plain_key.columns[0] == SinkColumn(
        "__connect_key", "key", None, "BIGINT", False, "plain"
    )
    named_key = row_shape(record(LongType(), VALUE), "record_key", ("id",))
    assert named_key.names == ["id", "name", "tags", "photo"], "the key's id wins"
    assert named_key.columns[0].side == "key"
    struct_key = StructType([StructField("region", StringType()), StructField("id", LongType())])
    composite = row_shape(record(struct_key, VALUE), "record_key", ())
    assert composite.key == ("region", "id")
    assert composite.new_columns()[0] == NewColumn("region", "TEXT", False)


@pytest.mark.parametrize(
    ("schema", "pk_mode", "fields", "reason"),
    [
        (record(StringType(), StringType()), "none", (), "not a struct"),
        (StructType([StructField("value", VALUE)]), "none", (), "no topic, partition, offset"),
        (StructType([StructField("value", VALUE)]), "record_key", (), "no key, topic"),
        (record(StringType(), VALUE), "record_value", ("nope",), "nope, not in the value"),
        (record(LongType(), VALUE), "record_key", ("a", "b"), "may name only one"),
        (
            record(StringType(), StructType([StructField("t", MapType(StringType(), LongType()))])),
            "none",
            (),
            "",
        ),
    ],
)
def test_row_shapes_refused(
    schema: StructType, pk_mode: str, fields: tuple[str, ...], reason: str
) -> None:
    if not reason:
        assert row_shape(schema, "none", ()).columns[0].pg_type == "JSONB"
        return
    with pytest.raises(RowShapeError, match=reason):
        row_shape(schema, pk_mode, fields)  # type: ignore[arg-type]


def test_types_and_missing_columns() -> None:
    assert postgres_type(DecimalType(12, 2)) == ("NUMERIC(12,2)", "plain")
    assert postgres_type(TimestampType()) == ("TIMESTAMPTZ", "plain")
    assert postgres_type(TimestampNTZType()) == ("TIMESTAMP", "plain")
    shape = row_shape(record(StringType(), VALUE), "none", ())
    assert [c.name for c in missing_columns(shape, ["id", "Name", "tags"])] == ["name", "photo"]


def test_which_errors_are_a_record_s_and_which_may_pass() -> None:
    assert is_record_error("23505") and is_record_error("22P02") and is_record_error("23514")
    assert not is_record_error("42P01") and not is_record_error(None)
    assert is_transient("08006", "") and is_transient("57P01", "") and is_transient("40001", "")
    assert not is_transient("42501", "permission denied")
    assert is_transient(None, 'connection to server at "h", port 1 failed: Connection refused')
    assert is_transient(None, "FATAL: the database system is starting up")
    assert not is_transient(None, 'FATAL: password authentication failed for user "u"')
    assert not is_transient(None, 'FATAL: database "d" does not exist')


def test_apply_in_parts_finds_each_failing_row_and_keeps_the_rest() -> None:
    bad = {3, 4, 17}
    applied: list[int] = []
    calls = []

    def attempt(start: int, end: int) -> str | None:
        calls.append((start, end))
        failing = [n for n in range(start, end) if n in bad]
        if failing:
            return f"row {failing[0]}"
        applied.extend(range(start, end))
        return None

    found = apply_in_parts(20, 8, attempt)
    assert found == [(3, "row 3"), (4, "row 4"), (17, "row 17")]
    assert applied == [n for n in range(20) if n not in bad]
    assert calls[0] == (0, 8)
    applied.clear()
    assert apply_in_parts(20, 8, attempt, limit=1) == [(3, "row 3")]
    assert max(applied) < 8, "nothing after the first failure is applied"


def test_an_upsert_batch_sends_each_key_once_its_latest_record_in_offset_order() -> None:
    import pyarrow as pa

    rows = pa.table(
        {
            "c0": [1, 2, 1, None, 3, None, 2],
            "c1": ["a", "b", "c", "d", "e", "f", "g"],
            "offset": list(range(7)),
        }
    )
    assert latest_per_key(rows, ["c0"]).to_pydict() == {
        "c0": [1, 3, None, 2],
        "c1": ["c", "e", "f", "g"],
        "offset": [2, 4, 5, 6],
    }
    assert latest_per_key(rows, ["c0", "c1"]).num_rows == 7
