"""kafka-to-iceberg without Spark: its keys, the catalog settings they make, the
partition fields, the comparison of a batch's columns with the table's, and the commit
loop's retry and password hiding."""

from __future__ import annotations

import pytest
from pyspark.errors import PySparkException

from worker.connectors.iceberg.catalog import (
    CatalogSettings,
    IcebergKeyError,
    PartitionField,
    TableName,
    catalog_conf,
    check_catalog_name,
    missing_partition_columns,
    parse_partition_by,
    parse_table,
)
from worker.connectors.iceberg.kafka_to_iceberg import (
    KafkaToIcebergConnector,
    catalog_errors,
    settings_of,
    with_retries,
)
from worker.connectors.iceberg.schema import compare, schema_problem
from worker.connectors.iceberg.table import IcebergCatalogError
from worker.connectors.table_columns import Column, TypeChange
from worker.plugins.api import HIDDEN, ConnectorConfigError, secret_keys

HADOOP = {
    "connector.class": "kafka-to-iceberg",
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "topics": "orders",
    "iceberg.tables": "shop.orders",
    "iceberg.catalog.type": "hadoop",
    "iceberg.catalog.warehouse": "/data/lake",
}
JDBC = {
    **HADOOP,
    "iceberg.catalog.type": "jdbc",
    "iceberg.catalog.uri": "jdbc:postgresql://127.0.0.1:5432/lake",
    "iceberg.catalog.jdbc.user": "lake",
    "iceberg.catalog.jdbc.password": "s3cret-pw",
}


def test_defaults_follow_icebergs_kafka_connect_sink() -> None:
    settings, _ = settings_of(HADOOP)
    rules = settings.rules()
    assert rules.name == TableName(("shop",), "orders")
    assert (rules.auto_create, rules.evolve, rules.partition_by) == (True, False, ())
    assert rules.catalog == "iceberg"
    assert rules.qualified == "`iceberg`.`shop`.`orders`"
    assert settings_of({**HADOOP, "iceberg.catalog": "lake"})[0].rules().catalog == "lake"


def test_the_warehouse_is_a_written_location_and_binds_the_checkpoint_with_the_table() -> None:
    assert KafkaToIcebergConnector.output_path_keys == ("iceberg.catalog.warehouse",)
    assert set(KafkaToIcebergConnector.checkpoint_keys) == {
        "iceberg.tables",
        "iceberg.catalog.warehouse",
    }


def test_the_catalog_password_is_a_secret_and_never_echoed() -> None:
    assert secret_keys(KafkaToIcebergConnector.config_model) == {"iceberg.catalog.jdbc.password"}
    with pytest.raises(ConnectorConfigError) as error:
        settings_of({**JDBC, "iceberg.catalog.jdbc.password": "", "iceberg.tables": "x"})
    assert "iceberg.tables" in str(error.value)
    settings, _ = settings_of(JDBC)
    assert "s3cret-pw" not in repr(settings)


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({**HADOOP, "iceberg.tables": "orders"}, "iceberg.tables"),
        ({**HADOOP, "iceberg.tables": "shop.orders,shop.refunds"}, "iceberg.tables"),
        ({**HADOOP, "iceberg.tables": "shop.or-ders"}, "iceberg.tables"),
        ({**HADOOP, "iceberg.catalog": "Spark_Catalog"}, "iceberg.catalog"),
        ({**HADOOP, "iceberg.catalog.type": "rest"}, "iceberg.catalog.type"),
        ({**HADOOP, "iceberg.catalog.warehouse": " "}, "iceberg.catalog.warehouse"),
        ({**HADOOP, "iceberg.catalog.uri": "jdbc:postgresql://h/db"}, "iceberg.catalog.uri"),
        ({**JDBC, "iceberg.catalog.uri": ""}, "iceberg.catalog.uri"),
        ({**JDBC, "iceberg.catalog.uri": "jdbc:h2:mem:x"}, "iceberg.catalog.uri"),
        (
            {**HADOOP, "iceberg.tables.default-partition-by": "days(a, b)"},
            "iceberg.tables.default-partition-by",
        ),
        (
            {**HADOOP, "iceberg.tables.auto-create-enabled": "maybe"},
            "iceberg.tables.auto-create-enabled",
        ),
    ],
)
def test_a_bad_value_is_named_by_its_key(config: dict[str, str], key: str) -> None:
    with pytest.raises(ConnectorConfigError) as error:
        settings_of(config)
    assert [p.key for p in error.value.problems] == [key]


def test_table_names() -> None:
    assert parse_table(" a.b.t ") == TableName(("a", "b"), "t")
    assert str(parse_table("shop.orders")) == "shop.orders"
    assert parse_table("shop.orders").namespace_in("c") == "`c`.`shop`"


def test_partition_fields_take_columns_and_icebergs_transforms() -> None:
    fields = parse_partition_by("topic, days(timestamp), bucket(16, key),TRUNCATE(4,value)")
    assert fields == (
        PartitionField("topic"),
        PartitionField("timestamp", "days"),
        PartitionField("key", "bucket", 16),
        PartitionField("value", "truncate", 4),
    )
    assert [f.sql() for f in fields] == [
        "`topic`",
        "days(`timestamp`)",
        "bucket(16, `key`)",
        "truncate(4, `value`)",
    ]
    assert parse_partition_by(" ") == ()
    for bad in ("bucket(key)", "days(3, ts)", "bucket(0, key)", "identity(key)", "a b"):
        with pytest.raises(IcebergKeyError):
            parse_partition_by(bad)


def test_missing_partition_columns_are_named_once() -> None:
    fields = parse_partition_by("region, days(ts), bucket(4, Region)")
    assert missing_partition_columns(fields, ["TS", "key"]) == ["region"]
    assert missing_partition_columns(fields, ["ts", "region"]) == []


def test_catalog_conf_for_each_type() -> None:
    prefix = "spark.sql.catalog.c"
    hadoop = catalog_conf("c", CatalogSettings("hadoop", "/lake"))
    assert hadoop == {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "hadoop",
        f"{prefix}.warehouse": "/lake",
        f"{prefix}.cache-enabled": "false",
    }
    jdbc = catalog_conf("c", CatalogSettings("jdbc", "/lake", "jdbc:postgresql://h/d", "u", "p"))
    assert {k: jdbc[k] for k in jdbc.keys() - hadoop.keys()} == {
        f"{prefix}.uri": "jdbc:postgresql://h:5432/d",
        f"{prefix}.jdbc.user": "u",
        f"{prefix}.jdbc.password": "p",
        f"{prefix}.jdbc.connectTimeout": "10",
        f"{prefix}.jdbc.sslcert": "",
        f"{prefix}.jdbc.sslkey": "",
        f"{prefix}.jdbc.gssEncMode": "disable",
        f"{prefix}.jdbc.requireAuth": "!password,!gss,!sspi",
    }
    assert check_catalog_name("lake_1") == "lake_1"
    for bad in ("spark_catalog", "a.b", "1x"):
        with pytest.raises(IcebergKeyError):
            check_catalog_name(bad)


def test_schema_comparison() -> None:
    table = [Column("id", "bigint"), Column("name", "string"), Column("price", "decimal(10,2)")]
    same = compare(table, [Column("ID", "int"), Column("name", "string")])
    assert not same.changes
    assert same.absent == (Column("price", "decimal(10,2)"),)
    assert schema_problem(same, "s.t", evolve=False) is None

    grown = compare(
        table,
        [
            Column("id", "bigint"),
            Column("price", "decimal(12,2)"),
            Column("note", "string"),
        ],
    )
    assert grown.added == (Column("note", "string"),)
    assert grown.widened == (TypeChange("price", "decimal(10,2)", "decimal(12,2)"),)
    problem = schema_problem(grown, "s.t", evolve=False)
    assert problem is not None
    assert "note string" in problem and "price" in problem
    assert "iceberg.tables.evolve-schema-enabled=true" in problem
    assert schema_problem(grown, "s.t", evolve=True) is None

    changed = compare(table, [Column("name", "int")])
    assert changed.incompatible == (TypeChange("name", "string", "int"),)
    for evolve in (False, True):
        problem = schema_problem(changed, "s.t", evolve)
        assert problem is not None and "`name` string in the table, int in the batch" in problem


def test_small_integers_are_stored_as_int() -> None:
    assert not compare([Column("n", "int")], [Column("n", "smallint")]).changes
    assert compare([Column("n", "int")], [Column("n", "bigint")]).widened


def test_catalog_errors_hide_the_password() -> None:
    with pytest.raises(IcebergCatalogError) as error, catalog_errors("pw-123"):
        raise OSError("login pw-123 refused")
    assert str(error.value) == f"OSError: login {HIDDEN} refused"
    assert error.value.__suppress_context__


class ValueFailure(PySparkException):  # type: ignore[misc]
    """What Spark raises for one record's value (a cast under ANSI mode)."""

    def getSqlState(self) -> str:
        return "22018"


def test_catalog_errors_let_a_records_failure_through_for_the_batch_step_to_name() -> None:
    with pytest.raises(ValueFailure), catalog_errors("pw"):
        raise ValueFailure("CAST_INVALID_INPUT")


class Attempts:
    """A commit that fails with the given errors first, then succeeds."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


RACE = "org.apache.iceberg.exceptions.CommitFailedException: Version 4 already exists"


def test_a_race_with_another_task_is_tried_again_and_nothing_else_is() -> None:
    pauses: list[float] = []
    raced = Attempts(OSError(RACE), OSError("AlreadyExistsException: Table shop.t"))
    with_retries(raced, None, "batch 3", pauses.append)
    assert raced.calls == 3
    assert len(pauses) == 2

    broken = Attempts(OSError("disk full"))
    with pytest.raises(IcebergCatalogError, match="disk full"):
        with_retries(broken, None, "batch 3", pauses.append)
    assert broken.calls == 1

    endless = Attempts(*(OSError(RACE) for _ in range(10)))
    with pytest.raises(IcebergCatalogError, match="CommitFailedException"):
        with_retries(endless, None, "batch 3", pauses.append)
    assert endless.calls == 6
