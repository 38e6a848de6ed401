"""Which driver kafka-to-jdbc writes with: one Spark batch of rows into PostgreSQL, with
the batch's ledger row in the same transaction, by each candidate write path.

- `psycopg2-copy`: the batch to the driver as Arrow (`DataFrame.toArrow`), written as CSV
  by Arrow and `COPY`'d into the table by psycopg2, the ledger row in the same
  transaction (insert mode);
- `psycopg2-copy-upsert`: the same `COPY` into a temporary table, then `INSERT .. ON
  CONFLICT DO UPDATE` from it (upsert mode; every key new, so every row inserted);
- `jvm-staging`: Spark's JDBC writer (the JVM driver `org.postgresql:postgresql`, from
  the executors, `reWriteBatchedInserts=true`, batchsize 10,000) into a staging table,
  then one transaction moving the rows into the table with the ledger row (the JVM
  driver's writes are committed per partition, so only a staging table keeps the batch
  in one transaction with its ledger row);
- `writer-insert`, `writer-upsert`: what the connector runs, `JdbcBatchWriter` (the first
  path inside, savepoints per `batch.size` part, the ledger in insert mode), over the same
  rows as records (a struct value, topic, partition, offset), at `batch.size` 3000
  (Confluent's default and the connector's) and with the whole batch as one part.

Each path writes the same rows (a long key, two strings, a decimal, a timestamp, a
boolean) into a fresh table; the figure is the median wall time over the repeats, after
one warm-up run of each. Prints one line per path and a JSON line last.

    python -m tests.bench.jdbc_sink_write_path                  # 200,000 rows, 3 repeats
    python -m tests.bench.jdbc_sink_write_path --rows 50000 --repeats 1
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg2
from pyarrow import csv
from pyspark.sql import DataFrame, SparkSession

from tests.bench.result_file import ResultFile, add_json_option
from tests.support.postgres import PostgresServer, running_postgres
from worker.connectors.jdbc.connection import JdbcDatabase, parse_jdbc_url
from worker.connectors.jdbc.sql import InsertMode
from worker.connectors.jdbc.tables import JdbcTables, SinkRules
from worker.connectors.jdbc.writer import JdbcBatchWriter, TaskIdentity
from worker.plugins.jvm_packages import POSTGRESQL_DRIVER
from worker.records.errors.failed_records import PutFailure
from worker.runtime.spark_packages import spark_package_jars
from worker.runtime.spark_session import SparkSessionProvider

COLUMNS = (
    "id BIGINT PRIMARY KEY, name TEXT, city TEXT, amount NUMERIC(12,2), "
    "created TIMESTAMP WITH TIME ZONE, active BOOLEAN"
)
LEDGER = "CREATE TABLE IF NOT EXISTS ledger (task TEXT, batch BIGINT, PRIMARY KEY (task, batch))"


def batch_rows(spark: SparkSession, rows: int) -> DataFrame:
    frame = spark.range(rows).selectExpr(
        "id",
        "concat('customer-', id) AS name",
        "element_at(array('Oslo', 'Lyon', 'Porto', 'Graz'), CAST(id % 4 AS INT) + 1) AS city",
        "CAST(id % 100000 / 100 AS DECIMAL(12,2)) AS amount",
        "timestamp_seconds(1700000000 + id) AS created",
        "id % 2 = 0 AS active",
    )
    return frame.cache()


def fresh_table(server: PostgresServer, name: str) -> None:
    server.execute(f'DROP TABLE IF EXISTS "{name}"')
    server.execute(f'CREATE TABLE "{name}" ({COLUMNS})')
    server.execute(LEDGER)


def copy_csv(cursor: Any, frame: DataFrame, table: str) -> None:
    buffer = io.BytesIO()
    csv.write_csv(frame.toArrow(), buffer, csv.WriteOptions(include_header=False))
    buffer.seek(0)
    cursor.copy_expert(f"COPY {table} FROM STDIN (FORMAT csv)", buffer)


def psycopg2_copy(server: PostgresServer, frame: DataFrame, table: str, run: int) -> None:
    with contextlib.closing(psycopg2.connect(server.dsn)) as connection:
        with connection.cursor() as cursor:
            copy_csv(cursor, frame, table)
            cursor.execute("INSERT INTO ledger VALUES (%s, %s)", (table, run))
        connection.commit()


def psycopg2_copy_upsert(server: PostgresServer, frame: DataFrame, table: str, run: int) -> None:
    with contextlib.closing(psycopg2.connect(server.dsn)) as connection:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TEMP TABLE stage (LIKE {table}) ON COMMIT DROP")
            copy_csv(cursor, frame, "stage")
            cursor.execute(
                f"INSERT INTO {table} SELECT * FROM stage ON CONFLICT (id) DO UPDATE SET "
                "name = EXCLUDED.name, city = EXCLUDED.city, amount = EXCLUDED.amount, "
                "created = EXCLUDED.created, active = EXCLUDED.active"
            )
            cursor.execute("INSERT INTO ledger VALUES (%s, %s)", (table, run))
        connection.commit()


def jvm_staging(server: PostgresServer, frame: DataFrame, table: str, run: int) -> None:
    stage = f"{table}_stage_{run}"
    server.execute(f"CREATE UNLOGGED TABLE {stage} (LIKE {table})")
    frame.write.option("batchsize", 10_000).jdbc(
        f"{server.jdbc_url}?reWriteBatchedInserts=true",
        stage,
        mode="append",
        properties={
            "user": server.user,
            "password": server.password,
            "driver": "org.postgresql.Driver",
        },
    )
    with contextlib.closing(psycopg2.connect(server.dsn)) as connection:
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table} SELECT * FROM {stage}")
            cursor.execute("INSERT INTO ledger VALUES (%s, %s)", (table, run))
            cursor.execute(f"DROP TABLE {stage}")
        connection.commit()


def connector_writer(mode: InsertMode, batch_size: int) -> WritePath:
    """The connector's own writer, `mode` by the record's id where it needs a key."""

    def write(server: PostgresServer, frame: DataFrame, table: str, run: int) -> None:
        from pyspark.sql import functions as f

        records = frame.select(
            f.col("id").cast("string").alias("key"),
            f.struct(*frame.columns).alias("value"),
            f.lit("bench").alias("topic"),
            f.lit(0).alias("partition"),
            f.col("id").alias("offset"),
        )
        rules = SinkRules(
            table,
            mode,
            "none" if mode == "insert" else "record_value",
            () if mode == "insert" else ("id",),
            False,
            False,
            False,
            batch_size,
            0,
            0,
        )
        database = JdbcDatabase(parse_jdbc_url(server.jdbc_url), server.user, server.password)
        identity = TaskIdentity("bench", 0, lambda: f"{table}-{run}")
        tables = JdbcTables(database, rules)
        tables.check(["bench"])
        writer = JdbcBatchWriter(tables, identity, refuse_failures, tolerant=False)
        writer(records, run)

    return write


def refuse_failures(batch_id: int, sink: str, failures: Sequence[PutFailure]) -> None:
    raise AssertionError(f"batch {batch_id}: {failures[:3]}")


WritePath = Callable[[PostgresServer, DataFrame, str, int], None]
PATHS: dict[str, WritePath] = {
    "psycopg2-copy": psycopg2_copy,
    "psycopg2-copy-upsert": psycopg2_copy_upsert,
    "jvm-staging": jvm_staging,
    "writer-insert-3000": connector_writer("insert", 3000),
    "writer-insert-whole": connector_writer("insert", 10**9),
    "writer-upsert-3000": connector_writer("upsert", 3000),
    "writer-upsert-whole": connector_writer("upsert", 10**9),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    provider = SparkSessionProvider(
        {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2"},
        "jdbc-sink-write-path",
        lambda: spark_package_jars([POSTGRESQL_DRIVER], os.environ),
    )
    results: dict[str, dict[str, float]] = {}
    try:
        spark = provider.get()
        frame = batch_rows(spark, args.rows)
        frame.count()
        with running_postgres() as server:
            timings: dict[str, list[float]] = {name: [] for name in PATHS}
            for run in range(args.repeats + 1):
                for name, path in PATHS.items():
                    table = name.replace("-", "_")
                    fresh_table(server, table)
                    started = time.perf_counter()
                    path(server, frame, table, run)
                    elapsed = time.perf_counter() - started
                    (written,) = server.execute(f"SELECT count(*) FROM {table}")[0]
                    assert written == args.rows, (name, written)
                    if run > 0:
                        timings[name].append(elapsed)
            for name, seconds in timings.items():
                median = statistics.median(seconds)
                results[name] = {
                    "median_s": round(median, 2),
                    "rows_per_s": round(args.rows / median),
                    "min_s": round(min(seconds), 2),
                    "max_s": round(max(seconds), 2),
                }
                print(
                    f"{name:22} {args.rows:,} rows: median {median:.2f} s "
                    f"({args.rows / median:,.0f} rows/s), range {min(seconds):.2f}-"
                    f"{max(seconds):.2f} s over {len(seconds)} runs"
                )
    finally:
        provider.stop()
    print(json.dumps({"rows": args.rows, "repeats": args.repeats, **results}))
    result.write(results)


if __name__ == "__main__":
    main()
