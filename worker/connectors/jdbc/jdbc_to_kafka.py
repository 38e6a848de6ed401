"""`jdbc-to-kafka`: PostgreSQL tables (or one query) into Kafka incrementally, with the
keys of Confluent's JDBC source: each new row (by an incrementing column, a timestamp
column, or both) published once.

Each table is one Spark source of the task's one query (`source`), its high-water
mark that source's offset, so Spark's checkpoint is where the task stands: a restarted
or moved task continues after the last batch it committed, and KIP-875's offsets API
shows, moves and resets each table's mark. Tables are split over tasks, each table in
one task; a `query` is one task. A table's rows go to `topic.prefix` + the table's name
as `table.whitelist` writes it (a `query`'s to `topic.prefix` itself, as in Confluent).

Records are published as files-to-kafka's are, through the `sparkherd-kafka` sink: each
row once (its identity the table and its number within the batch, whose rows are read
in order), in Kafka transactions where the broker has them (`exactly.once.support`).
The value is the row through `value.converter` (by default plain JSON), the key the
`key.field` column through `key.converter`, or none (Confluent's source sets none; its
users set one with SMTs).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Final

import psycopg2
from pydantic import BaseModel, Field

from worker.connectors.jdbc.connection import URL_KEY, JdbcConnectionSettings, url_files
from worker.connectors.jdbc.positions import (
    QUERY_TABLE,
    Mode,
    TableNameError,
    parse_table,
    split_tables,
)
from worker.connectors.jdbc.queries import (
    ColumnsError,
    QueryTextError,
    TableQueries,
    check_query,
    columns_of,
)
from worker.connectors.jdbc.source import (
    QUERY_TIMEOUT_KEY,
    QUERY_TIMEOUT_MS_DEFAULT,
    JdbcDataSource,
    TableReadError,
    TableSource,
)
from worker.connectors.source_records import (
    CONVERTER_DEFAULTS,
    PublishOnceSettings,
    published_rows,
)
from worker.kafka.connection import KafkaConnectionSettings
from worker.kafka.spark_io import publish_once, register
from worker.kafka.topic_admin import ensure_source_topic
from worker.kafka.topic_creation import topic_creation
from worker.plugins.api import (
    JAVA_INT_MAX,
    ConfigProblem,
    Connector,
    ConnectorConfigError,
    NonEmptyStr,
    Task,
    TaskContext,
    parse_config,
)
from worker.plugins.config_values import KAFKA_NAME_RULE, is_kafka_name
from worker.plugins.start_deadline import START_TIMEOUT_MS_DEFAULT, StartDeadline
from worker.records.converters.columns import ConverterMismatchError
from worker.records.converters.spec import (
    ConverterSettings,
    RecordConverters,
    parse_with_converters,
    record_converters,
)
from worker.records.errors.settings import not_reading_kafka_problems
from worker.records.transforms.config import chain_problems, parse_chain, routed_topics
from worker.records.transforms.routing import known_routes
from worker.runtime.checkpoint_offsets import committed_offsets

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.types import StructType

TABLES_KEY: Final = "jdbc.task.tables"
"""In a task config: the JSON list of the tables this task reads."""
MAX_CONNECTION_ATTEMPTS: Final = 100
MAX_CONNECTION_BACKOFF_MS: Final = START_TIMEOUT_MS_DEFAULT


class JdbcToKafkaSettings(
    JdbcConnectionSettings, KafkaConnectionSettings, ConverterSettings, PublishOnceSettings
):
    mode: Mode = Field(
        alias="mode",
        description="How new rows are found: by a strictly increasing column "
        "(`incrementing`), a last-modified column (`timestamp`), or both",
    )
    incrementing_column_name: NonEmptyStr | None = Field(
        default=None, alias="incrementing.column.name"
    )
    timestamp_column_name: NonEmptyStr | None = Field(
        default=None,
        alias="timestamp.column.name",
        description="One column, or a comma list read as COALESCE(a, b, ...)",
    )
    table_whitelist: NonEmptyStr | None = Field(
        default=None, alias="table.whitelist", description="Tables to read: table or schema.table"
    )
    query: NonEmptyStr | None = Field(
        default=None, alias="query", description="A SELECT to read instead of tables"
    )
    topic_prefix: str = Field(alias="topic.prefix")
    poll_interval_ms: int = Field(default=5000, alias="poll.interval.ms", ge=100, le=JAVA_INT_MAX)
    batch_max_rows: int = Field(default=100, alias="batch.max.rows", ge=1, le=JAVA_INT_MAX)
    timestamp_delay_interval_ms: int = Field(
        default=0,
        alias="timestamp.delay.interval.ms",
        ge=0,
        le=JAVA_INT_MAX,
        description="How old a row's timestamp must be before it is read, so that "
        "transactions still open with an earlier timestamp commit first",
    )
    key_field: NonEmptyStr | None = Field(
        default=None, alias="key.field", description="The column whose value keys each record"
    )
    connection_attempts: int = Field(
        default=3,
        alias="connection.attempts",
        ge=1,
        le=MAX_CONNECTION_ATTEMPTS,
        description="Attempts to open a connection (Confluent's range starts at 1 and has "
        f"no end; at most {MAX_CONNECTION_ATTEMPTS} here: a start is cancelled after "
        "task.start.timeout.ms anyway, and a running task's reconnection must end too)",
    )
    connection_backoff_ms: int = Field(
        default=10_000,
        alias="connection.backoff.ms",
        ge=0,
        le=MAX_CONNECTION_BACKOFF_MS,
        description="The wait between two attempts (Confluent gives no range; at most "
        f"{MAX_CONNECTION_BACKOFF_MS} ms here, the default task.start.timeout.ms: a "
        "longer wait could never be followed by an attempt within a start)",
    )
    query_timeout_ms: int = Field(
        default=QUERY_TIMEOUT_MS_DEFAULT,
        alias=QUERY_TIMEOUT_KEY,
        ge=1,
        le=JAVA_INT_MAX,
        description="How long one statement may run (PostgreSQL's statement_timeout); "
        "a poll that takes longer fails the task",
    )

    @property
    def tables(self) -> list[str]:
        if self.query is not None:
            return [QUERY_TABLE]
        return [t.strip() for t in (self.table_whitelist or "").split(",") if t.strip()]

    @property
    def timestamps(self) -> tuple[str, ...]:
        names = (self.timestamp_column_name or "").split(",")
        return tuple(name.strip() for name in names if name.strip())

    def topic(self, table: str) -> str:
        return self.topic_prefix if self.query is not None else self.topic_prefix + table

    def queries(self, table: str) -> TableQueries:
        relation = check_query(self.query) if self.query is not None else parse_table(table)
        return TableQueries(
            relation,
            self.mode,
            self.incrementing_column_name,
            self.timestamps,
            self.timestamp_delay_interval_ms,
        )


def settings_of(config: Mapping[str, str]) -> tuple[JdbcToKafkaSettings, RecordConverters]:
    return parse_with_converters(JdbcToKafkaSettings, config, CONVERTER_DEFAULTS, "write")


def settings_problems(settings: JdbcToKafkaSettings) -> list[ConfigProblem]:
    """What the keys say together: one of `table.whitelist` and `query`, the columns
    the mode needs, table names, a query that can run as a subquery, topic names."""
    problems = []
    if (settings.table_whitelist is None) == (settings.query is None):
        problems.append(
            ConfigProblem("table.whitelist", "set exactly one of table.whitelist and query")
        )
    if settings.mode != "timestamp" and settings.incrementing_column_name is None:
        problems.append(
            ConfigProblem("incrementing.column.name", f"mode {settings.mode} needs this column")
        )
    if settings.mode != "incrementing" and not settings.timestamps:
        problems.append(
            ConfigProblem("timestamp.column.name", f"mode {settings.mode} needs this column")
        )
    if settings.query is not None:
        try:
            check_query(settings.query)
        except QueryTextError as exc:
            problems.append(ConfigProblem("query", str(exc)))
    tables = settings.tables if settings.table_whitelist is not None else []
    if settings.table_whitelist is not None and not tables:
        problems.append(ConfigProblem("table.whitelist", "names no table"))
    if len(set(tables)) != len(tables):
        problems.append(ConfigProblem("table.whitelist", "names a table twice"))
    for table in tables:
        try:
            parse_table(table)
        except TableNameError as exc:
            problems.append(ConfigProblem("table.whitelist", str(exc)))
    for table in settings.tables if settings.query is None else [QUERY_TABLE]:
        topic = settings.topic(table)
        if not is_kafka_name(topic):
            problems.append(
                ConfigProblem(
                    "topic.prefix", f"{topic!r} is no Kafka topic name: {KAFKA_NAME_RULE}"
                )
            )
    return problems


def table_source(
    settings: JdbcToKafkaSettings, table: str, deadline: StartDeadline | None = None
) -> TableSource:
    """`table` with its columns, as the database describes them now; `TableReadError`
    names the table when it is missing, lacks a column, or the database cannot be read.
    A task's start passes its `deadline`, which the connection waits on."""
    source = TableSource(
        settings.database,
        table,
        settings.queries(table),
        (),
        settings.batch_max_rows,
        settings.connection_attempts,
        settings.connection_backoff_ms,
        settings.query_timeout_ms,
    )
    with contextlib.closing(source.connect(deadline)) as connection:
        try:
            with connection.cursor() as cursor:
                cursor.execute(source.queries.describe())
                described = [
                    (d.name, d.type_code, d.precision, d.scale) for d in cursor.description
                ]
            connection.rollback()
        except psycopg2.Error as exc:
            raise source.failure("read", exc) from None
    try:
        columns = columns_of(table, described, source.queries, settings.key_field)
    except ColumnsError as exc:
        raise TableReadError(f"Cannot read table {table!r}: {exc}") from None
    return replace(source, columns=columns)


class CheckpointTablesError(RuntimeError):
    """A task's checkpoint holds the marks of other tables than the task reads now."""


def check_checkpoint_tables(checkpoint: Path, task: int, tables: Sequence[str]) -> None:
    """Fail before Spark does (with an assertion on its count of sources, or with a
    table's source handed another table's mark) when the tables a task reads changed
    under its checkpoint: `table.whitelist`, `query` or `tasks.max` was changed."""
    held = [next(iter(source.offset), None) for source in committed_offsets(checkpoint, task)]
    if held and held != list(tables):
        raise CheckpointTablesError(
            f"Task {task}'s checkpoint holds the marks of {held}, in that order, and the "
            f"task reads {list(tables)} now (table.whitelist, query or tasks.max changed). "
            "Restore them, or stop the connector and reset its offsets (DELETE "
            "/connectors/<name>/offsets: every table is then read from its beginning)"
        )


def spark_schema(source: TableSource) -> StructType:
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string

    return StructType(
        [StructField(c.name, _parse_datatype_string(c.spark_type)) for c in source.columns]
    )


def table_records(
    spark: SparkSession,
    source: TableSource,
    topic: str,
    settings: JdbcToKafkaSettings,
    converters: RecordConverters,
    config: Mapping[str, str],
) -> DataFrame:
    """One table's new rows as (origin, topic, key, value) for the Kafka sink, through the
    connector's `transforms` chain if it has one."""
    from pyspark.sql import functions as f

    schema = spark_schema(source)
    rows = spark.readStream.format(JdbcDataSource.name()).schema(schema)
    rows = rows.options(**source.options()).load()
    try:
        return published_rows(
            rows, f.lit(source.table), topic, settings.key_field, converters, config
        )
    except ConverterMismatchError as exc:
        raise ValueError(
            f"Cannot publish table {source.table!r}: {exc.key}: {exc.problem}"
        ) from None


class JdbcToKafkaTask(Task):
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        settings, converters = settings_of(context.task_config)
        tables: list[str] = json.loads(context.task_config[TABLES_KEY])
        check_checkpoint_tables(context.checkpoint_dir, context.task, tables)
        sources = [table_source(settings, table, context.deadline) for table in tables]
        topics = [settings.topic(table) for table in tables]
        routes = known_routes(spark, parse_chain(context.task_config), topics)
        with settings.connection.open("sparkherd-jdbc-to-kafka") as kafka:
            for topic in routes:
                ensure_source_topic(
                    kafka,
                    settings.bootstrap_servers,
                    topic,
                    topic_creation(context.task_config),
                    worker_enabled=context.topic_creation_enabled,
                )
        register(spark, JdbcDataSource)
        frames = [
            table_records(spark, source, topic, settings, converters, context.task_config)
            for source, topic in zip(sources, topics, strict=True)
        ]
        return publish_once(
            reduce(lambda a, b: a.union(b), frames),
            context,
            settings.connection,
            routes[0],
            settings.poll_interval_ms,
            settings.exactly_once_support,
            settings.transaction_timeout_ms,
            routed=routes,
        )


class JdbcToKafkaConnector(Connector):
    name = "jdbc-to-kafka"
    former_paths = ("worker.connectors.jdbc_to_kafka.JdbcToKafkaConnector",)
    config_model = JdbcToKafkaSettings
    connector_type = "source"

    def validate(self, config: Mapping[str, str]) -> BaseModel:
        """The settings and what they say together, the converters, the topic creation
        keys; `errors.deadletterqueue.*` keys are a problem (no Kafka record is read).
        One error names every problem."""
        problems: list[ConfigProblem] = []
        settings: JdbcToKafkaSettings | None = None
        try:
            settings = parse_config(JdbcToKafkaSettings, config)
        except ConnectorConfigError as exc:
            problems.extend(exc.problems)
        if settings is not None:
            problems.extend(settings_problems(settings))
        for check in (
            lambda: topic_creation(config),
            lambda: record_converters(config, CONVERTER_DEFAULTS, "write"),
        ):
            try:
                check()
            except ConnectorConfigError as exc:
                problems.extend(exc.problems)
        problems.extend(not_reading_kafka_problems(config, self.name))
        problems.extend(chain_problems(config))
        if problems or settings is None:
            raise ConnectorConfigError(problems)
        return settings

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        settings = parse_config(JdbcToKafkaSettings, config)
        return [
            {**config, TABLES_KEY: json.dumps(tables)}
            for tables in split_tables(settings.tables, max_tasks)
        ]

    def client_files(self, config: Mapping[str, str]) -> Mapping[str, Iterable[str]]:
        return {URL_KEY: url_files(config[URL_KEY])}

    def kafka_topics(self, config: Mapping[str, str]) -> Mapping[str, Iterable[str]]:
        """Each table's topic (`topic.prefix` + its name), or the query's; the chain's."""
        settings = parse_config(JdbcToKafkaSettings, config)
        named = {"topic.prefix": [settings.topic(table) for table in settings.tables]}
        return {**named, **routed_topics(config)}

    def create_task(self) -> Task:
        return JdbcToKafkaTask()
