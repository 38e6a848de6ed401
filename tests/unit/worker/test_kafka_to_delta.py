"""kafka-to-delta without Spark or a broker: its settings, and what it refuses to write
(a batch whose columns the table cannot take, a partition column the batch lacks, a
directory that is not a Delta table), decided from names and columns alone."""

from __future__ import annotations

import pytest

from worker.connectors.delta.checks import (
    SchemaEvolution,
    missing_partition_columns,
    plain_directory_refusal,
    schema_refusal,
)
from worker.connectors.delta.kafka_to_delta import KafkaToDeltaConnector, settings_of
from worker.connectors.delta.sink import backoff_s, java_class_names
from worker.connectors.table_columns import Column, ColumnDifference, TypeChange, compare_columns
from worker.plugins.api import ConnectorConfigError

BASE = {
    "connector.class": "kafka-to-delta",
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "topics": "orders",
    "table.path": "/lake/orders",
}
TABLE = [Column("id", "bigint"), Column("name", "string"), Column("day", "date")]


def test_defaults() -> None:
    settings, _ = settings_of(BASE)
    assert settings.table_path == "/lake/orders"
    assert settings.table_partition_by == ()
    assert settings.schema_evolution == "none"
    assert settings.topics == ("orders",)
    assert settings.errors_tolerance == "none"


def test_partition_columns_are_a_comma_separated_list() -> None:
    settings, _ = settings_of({**BASE, "table.partition.by": " day, region ,"})
    assert settings.table_partition_by == ("day", "region")


def test_a_partition_column_named_twice_is_refused() -> None:
    with pytest.raises(ConnectorConfigError) as error:
        settings_of({**BASE, "table.partition.by": "day,Day"})
    assert [p.key for p in error.value.problems] == ["table.partition.by"]


@pytest.mark.parametrize(
    ("key", "value"),
    [("table.path", ""), ("schema.evolution", "merge"), ("schema.evolution", "")],
)
def test_bad_values_are_named(key: str, value: str) -> None:
    with pytest.raises(ConnectorConfigError) as error:
        settings_of({**BASE, key: value})
    assert [p.key for p in error.value.problems] == [key]


def test_table_path_is_required_and_named_with_the_shared_keys_problems() -> None:
    config = {k: v for k, v in BASE.items() if k != "table.path"}
    with pytest.raises(ConnectorConfigError) as error:
        settings_of({**config, "errors.tolerance": "some"})
    assert {p.key for p in error.value.problems} == {"table.path", "errors.tolerance"}


def test_the_table_is_a_written_location_and_binds_the_checkpoint() -> None:
    assert KafkaToDeltaConnector.output_path_keys == ("table.path",)
    assert KafkaToDeltaConnector.checkpoint_keys == ("table.path",)
    assert KafkaToDeltaConnector.connector_type == "sink"


def test_the_same_columns_in_another_order_and_case_do_not_differ() -> None:
    batch = [Column("DAY", "date"), Column("id", "bigint"), Column("Name", "string")]
    assert compare_columns(TABLE, batch) == ColumnDifference()


def test_new_changed_and_missing_columns_are_told_apart() -> None:
    batch = [Column("id", "string"), Column("day", "date"), Column("region", "string")]
    assert compare_columns(TABLE, batch) == ColumnDifference(
        added=(Column("region", "string"),),
        changed=(TypeChange("id", "bigint", "string"),),
        absent=(Column("name", "string"),),
    )


def test_a_struct_whose_fields_change_is_a_changed_column() -> None:
    table = [Column("v", "struct<a:int>")]
    difference = compare_columns(table, [Column("v", "struct<a:int,b:int>")])
    assert difference.changed == (TypeChange("v", "struct<a:int>", "struct<a:int,b:int>"),)


def test_without_evolution_a_new_column_is_refused_by_name() -> None:
    difference = compare_columns(TABLE, [*TABLE, Column("region", "string")])
    refusal = schema_refusal(difference, "none", "/lake/orders")
    assert refusal is not None
    assert "/lake/orders" in refusal
    assert "new columns `region` string" in refusal
    assert "schema.evolution=add-columns" in refusal


def test_add_columns_takes_new_columns() -> None:
    difference = compare_columns(TABLE, [*TABLE, Column("region", "string")])
    assert schema_refusal(difference, "add-columns", "/lake/orders") is None


@pytest.mark.parametrize("evolution", ["none", "add-columns"])
def test_a_changed_type_is_refused_by_name_whatever_the_evolution(
    evolution: SchemaEvolution,
) -> None:
    batch = [Column("id", "string"), Column("name", "string"), Column("day", "date")]
    refusal = schema_refusal(compare_columns(TABLE, batch), evolution, "/t")
    assert refusal is not None
    assert "changed types `id` bigint in the table, string in the batch" in refusal


@pytest.mark.parametrize("evolution", ["none", "add-columns"])
def test_missing_columns_are_no_refusal(evolution: SchemaEvolution) -> None:
    difference = compare_columns(TABLE, TABLE[:1])
    assert difference.absent == tuple(TABLE[1:])
    assert schema_refusal(difference, evolution, "/t") is None


def test_both_faults_are_named_in_one_message() -> None:
    batch = [Column("id", "int"), Column("extra", "double")]
    refusal = schema_refusal(compare_columns(TABLE, batch), "none", "/t")
    assert refusal is not None
    assert "`extra` double" in refusal
    assert "`id` bigint in the table, int in the batch" in refusal


def test_a_partition_column_the_batch_lacks_is_named() -> None:
    assert missing_partition_columns(["DAY"], TABLE) is None
    refusal = missing_partition_columns(["day", "region"], TABLE)
    assert refusal is not None
    assert "`region`" in refusal
    assert "`day`" not in refusal
    assert "id, name, day" in refusal


def test_a_directory_with_files_but_no_delta_log_is_refused() -> None:
    assert plain_directory_refusal("/t", None) is None
    assert plain_directory_refusal("/t", []) is None
    assert plain_directory_refusal("/t", ["_delta_log", "part-0.parquet"]) is None
    assert plain_directory_refusal("/t", ["_delta_log"]) is None
    refusal = plain_directory_refusal("/t", ["d.csv", "c.csv", "b.csv", "a.csv"])
    assert refusal is not None
    assert refusal.startswith("table.path /t is not a Delta table")
    assert "a.csv, b.csv, c.csv, ..." in refusal


def test_a_python_error_has_no_java_classes_and_backoff_stays_bounded() -> None:
    assert java_class_names(ValueError("x")) == []
    delays = [backoff_s(attempt) for attempt in range(30)]
    assert all(0 < d <= 3.0 for d in delays)
