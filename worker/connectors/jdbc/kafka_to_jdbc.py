"""`kafka-to-jdbc`: Kafka topics into PostgreSQL tables, under the keys of Confluent's JDBC
sink, each record once.

Tasks split the topics' partitions as every Kafka sink does (`worker.connectors.
kafka_sink`); each writes its batches through psycopg2 (`writer`), a table per topic
(`table.name.format`), the columns from the records' value (and key) as Confluent's sink
makes them (`row_shape`). Exactly once: `upsert` and `update` write by key, so a
batch written again leaves the same rows; `insert` records each batch in a ledger table
in the same transaction as its rows (`ledger`), so a batch that runs again writes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import Field, field_validator

from worker.connectors.claimed_batches import start_claimed_query
from worker.connectors.jdbc.connection import URL_KEY, JdbcConnectionSettings, url_files
from worker.connectors.jdbc.ledger import has_batch, sink_table
from worker.connectors.jdbc.row_shape import PkMode, RowShapeError, row_shape
from worker.connectors.jdbc.sql import TOPIC_VARIABLE, IdentifierError, InsertMode
from worker.connectors.jdbc.tables import JdbcTables, SinkRules
from worker.connectors.jdbc.writer import JdbcBatchWriter, TaskIdentity
from worker.connectors.kafka_sink import (
    KafkaSinkConnector,
    KafkaSinkSettings,
    assigned_topics,
    sink_records,
    sink_settings,
)
from worker.plugins.api import (
    JAVA_INT_MAX,
    ConfigProblem,
    ConnectorConfigError,
    NonEmptyStr,
    Task,
    TaskContext,
)
from worker.plugins.checkpoint_layout import checkpoint_query_id
from worker.records.converters.spec import RecordConverters
from worker.records.transforms.config import parse_chain
from worker.records.transforms.routing import known_routes

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.types import StructType

TABLE_FORMAT_KEY: Final = "table.name.format"
PK_MODE_KEY: Final = "pk.mode"
PK_FIELDS_KEY: Final = "pk.fields"
DELETE_KEY: Final = "delete.enabled"


class KafkaToJdbcSettings(KafkaSinkSettings, JdbcConnectionSettings):
    table_name_format: NonEmptyStr = Field(
        default=TOPIC_VARIABLE,
        alias=TABLE_FORMAT_KEY,
        description="The table each topic's records go to: ${topic} is the topic's name; "
        "schema.table for a schema",
    )
    insert_mode: InsertMode = Field(
        default="insert",
        alias="insert.mode",
        description="insert; upsert (INSERT .. ON CONFLICT DO UPDATE by key); update",
    )
    pk_mode: PkMode = Field(
        default="none",
        alias=PK_MODE_KEY,
        description="Where the primary key comes from: none, record_key or record_value",
    )
    pk_fields: tuple[str, ...] = Field(
        default=(),
        alias=PK_FIELDS_KEY,
        description="Comma-separated key columns (default: all the key's or value's fields; "
        "__connect_key for a key that is not a struct)",
    )
    auto_create: bool = Field(
        default=False, alias="auto.create", description="Create a missing table"
    )
    auto_evolve: bool = Field(
        default=False,
        alias="auto.evolve",
        description="Add the records' new fields to the table as nullable columns",
    )
    delete_enabled: bool = Field(
        default=False,
        alias=DELETE_KEY,
        description="A tombstone (null value) deletes its key's row; needs pk.mode=record_key",
    )
    batch_size: int = Field(
        default=3000,
        alias="batch.size",
        ge=1,
        le=JAVA_INT_MAX,
        description="Rows sent in one COPY (a part applied or refused as a whole)",
    )
    max_retries: int = Field(
        default=10,
        alias="max.retries",
        ge=0,
        le=JAVA_INT_MAX,
        description="Tries again of a batch that failed for a reason that may pass",
    )
    retry_backoff_ms: int = Field(default=3000, alias="retry.backoff.ms", ge=0, le=JAVA_INT_MAX)

    @field_validator("insert_mode", "pk_mode", mode="before")
    @classmethod
    def _any_case(cls, value: object) -> object:
        """Confluent's configs spell these in capitals as often as not (`UPSERT`)."""
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("pk_fields", mode="before")
    @classmethod
    def _split_fields(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        fields = [f.strip() for f in value.split(",") if f.strip()]
        twice = sorted({f for f in fields if fields.count(f) > 1})
        if twice:
            raise ValueError(f"names {', '.join(twice)} more than once")
        return tuple(fields)

    def rules(self) -> SinkRules:
        return SinkRules(
            self.table_name_format,
            self.insert_mode,
            self.pk_mode,
            self.pk_fields,
            self.auto_create,
            self.auto_evolve,
            self.delete_enabled,
            self.batch_size,
            self.max_retries,
            self.retry_backoff_ms,
        )


def mode_problems(settings: KafkaToJdbcSettings) -> list[ConfigProblem]:
    """The combinations of keys that cannot work, refused before they are stored (where
    Confluent's sink refuses them when its task starts, or fails on the first record)."""
    problems = []
    if settings.insert_mode != "insert" and settings.pk_mode == "none":
        problems.append(
            ConfigProblem(
                PK_MODE_KEY,
                f"insert.mode={settings.insert_mode} writes by primary key: set pk.mode to "
                "record_key or record_value",
            )
        )
    if settings.delete_enabled and settings.pk_mode != "record_key":
        problems.append(
            ConfigProblem(
                DELETE_KEY,
                "needs pk.mode=record_key: a tombstone's key says which row to delete "
                f"(pk.mode={settings.pk_mode})",
            )
        )
    if settings.pk_fields and settings.pk_mode == "none":
        problems.append(
            ConfigProblem(PK_FIELDS_KEY, "only with pk.mode record_key or record_value")
        )
    for topic in settings.topics:
        try:
            sink_table(settings.table_name_format, topic)
        except IdentifierError as exc:
            problems.append(ConfigProblem(TABLE_FORMAT_KEY, f"for topic {topic!r}: {exc}"))
    return problems


def settings_of(config: Mapping[str, str]) -> tuple[KafkaToJdbcSettings, RecordConverters]:
    settings, converters = sink_settings(KafkaToJdbcSettings, config)
    problems = mode_problems(settings)
    if problems:
        raise ConnectorConfigError(problems)
    return settings, converters


def jdbc_has_batch(tables: JdbcTables, checkpoint: Path, task: int, batch: int) -> bool:
    """Whether the database holds batch `batch` of the checkpoint's query: in `insert`
    mode its ledger says; `upsert` and `update` write by key, so a batch written twice
    leaves the same rows, and it counts as not written. What a task asks before it takes
    partitions over from `checkpoint` (`worker.connectors.partition_takeover`)."""
    if tables.rules.insert_mode != "insert":
        return False
    with tables.connection() as connection:
        tables.ensure_ledger(connection)
        with tables.statements(connection, "the ledger") as cursor:
            cursor.execute(has_batch(), (checkpoint_query_id(checkpoint), batch))
            found = cursor.fetchone() is not None
        connection.rollback()
    return found


class KafkaToJdbcTask(Task):
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        settings, converters = settings_of(context.task_config)
        tables = JdbcTables(settings.database, settings.rules())
        chain = parse_chain(context.task_config)
        tables.check(known_routes(spark, chain, assigned_topics(context.task_config)))
        records = sink_records(
            spark, context, settings, converters, partial(jdbc_has_batch, tables)
        )
        writer = JdbcBatchWriter(
            tables,
            TaskIdentity(
                context.connector,
                context.task,
                lambda: checkpoint_query_id(context.checkpoint_dir),
            ),
            records.put_failed,
            tolerant=settings.errors_tolerance == "all",
        )
        return start_claimed_query(
            records.rows, context, settings.trigger_interval_ms, writer, records.step
        )


class KafkaToJdbcConnector(KafkaSinkConnector):
    name = "kafka-to-jdbc"
    former_paths = ("worker.connectors.kafka_to_jdbc.KafkaToJdbcConnector",)
    config_model = KafkaToJdbcSettings
    checkpoint_keys = (TABLE_FORMAT_KEY,)

    def settings(self, config: Mapping[str, str]) -> tuple[KafkaSinkSettings, RecordConverters]:
        return settings_of(config)

    def client_files(self, config: Mapping[str, str]) -> Mapping[str, Iterable[str]]:
        return {URL_KEY: url_files(config[URL_KEY])}

    def rows_problem(self, config: Mapping[str, str], rows: StructType) -> str | None:
        """What a task would fail on at its first batch, as a 400 (the value is not a
        struct, a `pk.fields` name is not a field, a type it does not write)."""
        settings, _ = settings_of(config)
        try:
            row_shape(rows, settings.pk_mode, settings.pk_fields)
        except RowShapeError as exc:
            return f"kafka-to-jdbc cannot write these rows: {exc}"
        return None

    def create_task(self) -> Task:
        return KafkaToJdbcTask()
