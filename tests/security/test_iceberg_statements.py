"""The statements kafka-to-iceberg runs to create and evolve its table, judged by Spark's
own parser: nothing of the rows' schema, which a REST caller writes (`transform.sql`
names the columns, a `value.schema` DDL carries comments), gets in but quoted names and
types. A comment ending in a backslash, then a second comment, once chose the table's
location: Spark's `toDDL` escapes quotes in a comment but not backslashes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from tests.support.in_process_spark import in_process_spark
from worker.connectors.iceberg.catalog import TableName
from worker.connectors.iceberg.ddl import quoted, type_sql
from worker.connectors.iceberg.table import TableRules, create_table_statement

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

ESCAPE = {"comment": "x\\"}
INJECTED = {"comment": ') USING iceberg LOCATION "/tmp/anywhere" --'}
RULES = TableRules(TableName(("shop",), "orders"), "lake", (), True, True)


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with in_process_spark("iceberg-statements", {"spark.master": "local[1]"}) as session:
        yield session


def parsed(spark: SparkSession, statement: str) -> Any:
    return spark._jsparkSession.sessionState().sqlParser().parsePlan(statement)


def test_comments_cannot_choose_where_the_table_is(spark: SparkSession) -> None:
    schema = StructType(
        [
            StructField("a", LongType(), True, ESCAPE),
            StructField("b", StringType(), True, INJECTED),
            StructField(
                "nested",
                StructType([StructField("c", LongType(), True, ESCAPE)]),
                True,
                INJECTED,
            ),
        ]
    )
    plan = str(parsed(spark, create_table_statement(spark, RULES, schema)).toString())
    assert "/tmp/anywhere" not in plan
    assert "Some(iceberg), optionlist(), None" in plan
    assert "columndefinition(a, LongType" in plan and "columndefinition(b, StringType" in plan


@pytest.mark.parametrize("name", ["plain", "with space", "back`quote", "`) LOCATION '/x' --"])
def test_any_column_name_stays_one_name(spark: SparkSession, name: str) -> None:
    schema = StructType([StructField(name, ArrayType(LongType()), True)])
    plan = parsed(spark, create_table_statement(spark, RULES, schema))
    columns = plan.columns()
    assert columns.size() == 1 and str(columns.apply(0).name()) == name
    alter = f"ALTER TABLE t ADD COLUMNS ({quoted(name)} {type_sql(spark, LongType())})"
    assert str(parsed(spark, alter).columnsToAdd().apply(0).name().apply(0)) == name
