"""`transform.sql` against Spark's own parser and analyzer (real Spark, in this process)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from tests.support.in_process_spark import in_process_spark
from worker.connectors.files.kafka_to_files import KafkaToFilesTask
from worker.connectors.kafka_sink import ASSIGN_KEY
from worker.kafka.source import SCHEMA, format_assignment
from worker.plugins.api import TaskContext
from worker.records.sql_policy import (
    QueryNotAllowed,
    analyze_query,
    check_query,
    query_session,
)

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

VIEWS = {"source": SCHEMA}


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with in_process_spark("sparkherd-sql-policy-test", {"spark.master": "local[1]"}) as session:
        yield session


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        (
            "INSERT OVERWRITE DIRECTORY '/tmp/x' USING csv "
            "SELECT TRANSFORM('x') USING 'id' AS (o STRING)",
            "InsertIntoDir",
        ),
        ("SELECT TRANSFORM(key) USING 'cat' FROM source", "ScriptTransformation"),
        ("SELECT * FROM source CROSS JOIN text.`/etc/hostname`", "text./etc/hostname"),
        ("SELECT * FROM parquet.`/etc`", "parquet./etc"),
        ("SELECT * FROM source WHERE EXISTS (SELECT * FROM text.`/etc/hostname`)", "text."),
        ("SELECT (SELECT max(value) FROM json.`/tmp`) FROM source", "json./tmp"),
        ("WITH a AS (SELECT * FROM csv.`/etc/passwd`) SELECT * FROM a", "csv./etc/passwd"),
        ("SELECT * FROM range(10)", "UnresolvedTableValuedFunction"),
        ("SELECT * FROM other_table", "not other_table"),
        ("SELECT * FROM global_temp.source", "global_temp.source"),
        ("SELECT reflect('java.lang.Runtime', 'getRuntime') FROM source", "reflect"),
        ("SELECT java_method('java.lang.System', 'exit', 1)", "java_method"),
        ("SELECT REFLECT('java.lang.Runtime', 'getRuntime')", "REFLECT"),
        ("SELECT xpath_string(CAST(value AS STRING), '/a') FROM source", "xpath_string"),
        ("SELECT my_udf(value) FROM source", "built-in"),
        ("SELECT db.upper(topic) FROM source", "built-in"),
        ("SELECT * FROM source LATERAL VIEW my_gen(value) t AS x", "built-in"),
        ("CREATE TEMPORARY FUNCTION f AS 'x.Y'", "only a query"),
        ("SET spark.sql.ansi.enabled=false", "only a query"),
        ("ADD JAR /tmp/x.jar", "only a query"),
        ("CACHE TABLE x AS SELECT * FROM source", "only a query"),
        ("EXPLAIN SELECT * FROM source", "only a query"),
        ("SELECT * FROM source; SELECT 1", "not one valid query"),
        ("SELEC * FROM source", "not one valid query"),
    ],
)
def test_anything_but_a_query_over_source_is_refused(
    spark: SparkSession, sql: str, fragment: str
) -> None:
    with pytest.raises(QueryNotAllowed) as caught:
        check_query(spark, sql, {"source"})
    assert fragment in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT CAST(key AS STRING) AS key, CAST(value AS STRING) AS value, topic, partition, "
        "offset, timestamp FROM source",
        "WITH recent AS (SELECT * FROM source WHERE offset > 10) SELECT topic FROM recent",
        "SELECT a.topic FROM source a JOIN source b ON a.key = b.key",
        "SELECT topic, count(*) AS n, max(offset) FROM source GROUP BY topic HAVING count(*) > 1",
        "SELECT topic, row_number() OVER (PARTITION BY topic ORDER BY offset) FROM source",
        "SELECT topic, part FROM source LATERAL VIEW explode(split(CAST(value AS STRING), ',')) "
        "t AS part",
        "SELECT * FROM SOURCE",
        "SELECT topic, (SELECT max(offset) FROM source) FROM source",
        "SELECT from_json(CAST(value AS STRING), 'a INT, b STRING') AS parsed FROM source",
        "SELECT transform(array(1, 2), x -> x + 1) FROM source",
    ],
)
def test_queries_over_source_are_accepted_and_analyzed(spark: SparkSession, sql: str) -> None:
    check_query(spark, sql, {"source"})
    analyze_query(spark, sql, VIEWS)


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        (
            "WITH `text./etc/hostname` AS (SELECT CAST(1 AS BINARY) AS value) "
            "SELECT value FROM text.`/etc/hostname`",
            "text./etc/hostname",
        ),
        (
            "SELECT topic FROM source WINDOW w AS "
            "(PARTITION BY xpath_string(CAST(value AS STRING), '/a'))",
            "xpath_string",
        ),
        (
            "SELECT max(offset) OVER w FROM source WINDOW w AS "
            "(PARTITION BY from_xml(CAST(value AS STRING), 'a INT'))",
            "from_xml",
        ),
        (
            "SELECT max(offset) OVER w FROM source WINDOW w AS "
            "(PARTITION BY (SELECT max(value) FROM text.`/etc/hostname`))",
            "text./etc/hostname",
        ),
        (
            "SELECT IDENTIFIER('xpath_string')(CAST(value AS STRING), '/a') FROM source",
            "IDENTIFIER",
        ),
        ("SELECT * FROM IDENTIFIER('text.`/etc/hostname`')", "PlanWithUnresolvedIdentifier"),
        (
            "SELECT /*+ REPARTITION(3, reflect('java.lang.String', 'valueOf', 1)) */ * FROM source",
            "reflect",
        ),
        ("SELECT explode(sequence(1, 400000000)) FROM source", "sequence"),
        ("SELECT explode(sequence(1, CAST(offset AS INT))) FROM source", "sequence"),
        ("SELECT array_repeat(value, 400000000) FROM source", "array_repeat"),
        ("SELECT repeat(CAST(value AS STRING), CAST(offset AS INT)) FROM source", "repeat"),
        ("SELECT lpad(topic, 2000000000, ' ') FROM source", "lpad"),
        ("SELECT printf('%2000000000d', partition) FROM source", "printf"),
    ],
)
def test_what_the_text_hides_is_judged_once_analysed(
    spark: SparkSession, sql: str, fragment: str
) -> None:
    """Each of these passed `analyze_query` once: a CTE named like a file table (Spark
    substitutes a CTE for a one-part name only, and read the file), functions named in a
    `WINDOW` clause, a hint or `IDENTIFIER()`, and generators that filled the heap."""
    with pytest.raises(QueryNotAllowed) as caught:
        analyze_query(spark, sql, VIEWS)
    assert fragment in str(caught.value)


def test_a_generator_within_the_workers_bound_is_accepted(spark: SparkSession) -> None:
    analyze_query(
        spark,
        "SELECT explode(sequence(1, 1000)), lpad(topic, 10, '0'), printf('%05d', partition) "
        "FROM source",
        VIEWS,
    )


def test_a_connectors_sql_cannot_name_a_file_as_a_table(spark: SparkSession) -> None:
    """Whatever a check misses: in the session a task's SQL runs in, a file is no table."""
    session = query_session(spark)
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        session.sql("SELECT * FROM text.`/etc/hostname`")
    assert spark.sql("SELECT * FROM text.`/etc/hostname`").count() == 1, "Spark's default"


def test_the_analyzer_names_an_unknown_column(spark: SparkSession) -> None:
    with pytest.raises(QueryNotAllowed, match="no_such_column"):
        analyze_query(spark, "SELECT no_such_column FROM source", VIEWS)


def test_a_refused_command_never_ran(spark: SparkSession, tmp_path: Path) -> None:
    """`session.sql` would have run both commands while parsing them; the checker must
    refuse them before Spark sees them as SQL to run."""
    target = tmp_path / "written"
    marker = tmp_path / "ran"
    for sql in (
        f"INSERT OVERWRITE DIRECTORY '{target}' USING csv SELECT 1 AS x",
        f"INSERT OVERWRITE DIRECTORY '{target}' USING csv "
        f"SELECT TRANSFORM('x') USING 'touch {marker}' AS (o STRING)",
    ):
        with pytest.raises(QueryNotAllowed):
            analyze_query(spark, sql, VIEWS)
    assert not target.exists()
    assert not marker.exists()


def refused_at_start(
    spark: SparkSession, tmp_path: Path, name: str, sql: str, fragment: str
) -> None:
    """A kafka-to-files task whose config holds `sql` unchecked refuses it before any
    query starts or writes."""
    config = {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": "127.0.0.1:9",
        "kafka.client": "python",
        "topics": "t",
        "output.path": str(tmp_path / "out"),
        "transform.sql": sql,
        ASSIGN_KEY: format_assignment([TopicPartition("t", 0)]),
    }
    context = TaskContext(name, 0, config, config, tmp_path / "checkpoints" / name / "0")
    with pytest.raises(QueryNotAllowed, match=fragment):
        KafkaToFilesTask().start(spark, context)
    assert not (tmp_path / "out").exists()
    assert not [q for q in spark.streams.active if q.name == context.query_name]


def test_a_task_refuses_a_query_that_reached_its_config_unchecked(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Admission checks `transform.sql` on the leader; a task config that got past it (a
    record written by an older worker, or by hand) is checked again before any query
    starts."""
    marker = tmp_path / "ran"
    sql = f"SELECT TRANSFORM(key) USING 'touch {marker}' FROM source"
    refused_at_start(spark, tmp_path, "k2f", sql, "ScriptTransformation")
    assert not marker.exists()


def test_a_task_refuses_a_cte_named_like_a_file_table(spark: SparkSession, tmp_path: Path) -> None:
    """The task's own check, against its real `source` view: this query once ran and
    wrote the file's lines into the connector's output."""
    secret = tmp_path / "secret.txt"
    secret.write_text("never in the output\n")
    sql = (
        f"WITH `text.{secret}` AS (SELECT * FROM source) "
        f"SELECT CAST(value AS STRING) AS value FROM text.`{secret}`"
    )
    refused_at_start(spark, tmp_path, "cte", sql, "not text")
