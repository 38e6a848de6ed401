"""`files-to-kafka`: a directory of json, csv or parquet files into a Kafka topic, each
file published once.

Spark's file stream source lists the directory and records in the task's checkpoint
which files each batch read, so a file is read by one batch only, and a batch that runs
again reads the same files. Each row becomes one record: its value is the row through
`value.converter` (by default the row as plain JSON: Connect's JsonConverter with
`schemas.enable=false`), its key the `key.field` column (if set) through `key.converter`
(by default StringConverter). The `sparkherd-kafka` sink then sends every row once,
also when the batch runs again (see worker/kafka/sink.py): on a broker with transactions
each Spark partition of a batch is one transaction, and a start of the task fences the
producers of the start before it (`exactly.once.support=requested`, the default, falls
back to the sink's own duplicate check on a broker without them; `required` refuses).

Tasks split the files by a hash of the file name (`pmod(hash(name), n) = i`); Spark
prunes by that filter before it reads, so a task reads only its own files. Every task
lists the whole directory, so the split must not change under running checkpoints: a
file could then be published by the task that had it and by the task that has it now.
A task refuses to start when any task's checkpoint was made under another split.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, Field

from worker.connectors.source_records import (
    CONVERTER_DEFAULTS,
    PublishOnceSettings,
    encoded_row,
    published_rows,
)
from worker.kafka.connection import KafkaConnectionSettings
from worker.kafka.spark_io import publish_once
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
from worker.records.converters.columns import ConverterMismatchError
from worker.records.converters.spec import (
    ConverterSettings,
    RecordConverters,
    parse_with_converters,
    record_converters,
)
from worker.records.errors.settings import not_reading_kafka_problems
from worker.records.nesting import ddl_nesting_problem
from worker.records.transforms.config import chain_problems, parse_chain, routed_topics
from worker.records.transforms.routing import known_routes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.types import StructType

SPLIT_KEY: Final = "files.split"
INPUT_SCHEMA_KEY: Final = "input.schema"
SPLIT_MARKER: Final = "files-split"
"""In a task's checkpoint: the number of tasks the files were split into."""
UNSPLIT_FILES: Final = str(1 << 40)
"""`spark.sql.files.maxPartitionBytes` for a task: a file is read whole by one Spark
task, so its rows come in file order (what the sink numbers them by)."""


class FilesToKafkaSettings(KafkaConnectionSettings, ConverterSettings, PublishOnceSettings):
    input_path: NonEmptyStr = Field(alias="input.path")
    input_format: Literal["json", "csv", "parquet"] = Field(default="json", alias="input.format")
    input_schema: NonEmptyStr | None = Field(
        default=None,
        alias=INPUT_SCHEMA_KEY,
        description="A DDL schema (`id LONG, name STRING`); by default inferred from the "
        "files there when the task starts",
    )
    csv_header: bool = Field(default=True, alias="csv.header")
    topic: NonEmptyStr = Field(alias="topic")
    key_field: NonEmptyStr | None = Field(
        default=None, alias="key.field", description="The column whose value keys each record"
    )
    max_files_per_trigger: int = Field(
        default=100, alias="max.files.per.trigger", ge=1, le=JAVA_INT_MAX
    )
    trigger_interval_ms: int = Field(
        default=1000, alias="trigger.interval.ms", ge=100, le=JAVA_INT_MAX
    )


def parse_split(text: str) -> tuple[int, int]:
    """`i/n`: this task is `i` of `n`."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise ValueError(f"{SPLIT_KEY} must be i/n with 0 <= i < n, not {text!r}")
    return int(index), int(count)


class SplitChangedError(RuntimeError):
    """Files were split over another number of tasks when a task's checkpoint began."""


def hold_split(context: TaskContext, count: int) -> None:
    """Record this task's split in its checkpoint, after checking every task's record."""
    for task, checkpoint in context.connector_checkpoints().items():
        marker = checkpoint / SPLIT_MARKER
        if marker.is_file() and marker.read_text().strip() != str(count):
            raise SplitChangedError(
                f"Task {task} of connector {context.connector} published files split over "
                f"{marker.read_text().strip()} tasks; they are split over {count} now, so "
                "a file could be published twice. Restore tasks.max, or stop the connector, "
                "reset its offsets and publish to a new topic"
            )
    context.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    (context.checkpoint_dir / SPLIT_MARKER).write_text(str(count))


def check_ends(
    settings: FilesToKafkaSettings, context: TaskContext, topics: Sequence[str] = ()
) -> None:
    """Fail the task with a plain message, not with a Spark job's trace, when an end is
    missing (a mistyped path or topic: the connector's, or one its chain routes to by
    name); a missing topic is created first when the connector's `topic.creation.*` keys
    and the worker allow it (KIP-158)."""
    if "://" not in settings.input_path and not Path(settings.input_path).is_dir():
        raise FileNotFoundError(f"input.path {settings.input_path!r} is not a directory")
    with settings.connection.open("sparkherd-files-to-kafka") as kafka:
        for topic in topics or [settings.topic]:
            ensure_source_topic(
                kafka,
                settings.bootstrap_servers,
                topic,
                topic_creation(context.task_config),
                worker_enabled=context.topic_creation_enabled,
            )


class InputSchemaError(ValueError):
    """No schema was given and none can be inferred."""


def input_schema(spark: SparkSession, settings: FilesToKafkaSettings) -> StructType | str:
    if settings.input_schema is not None:
        return settings.input_schema
    from pyspark.errors import AnalysisException

    try:
        return _reader(spark.read, settings).load(settings.input_path).schema
    except AnalysisException as exc:
        raise InputSchemaError(
            f"Cannot infer a schema from {settings.input_path!r} ({exc.getCondition()}): "
            "put a file there first, or set input.schema (e.g. `id LONG, name STRING`)"
        ) from exc


def _reader(reader, settings: FilesToKafkaSettings):  # type: ignore[no-untyped-def]
    """The options a batch or a stream reader needs for the input format."""
    reader = reader.format(settings.input_format)
    if settings.input_format == "csv":
        reader = reader.option("header", str(settings.csv_header).lower())
    return reader


def settings_of(config: Mapping[str, str]) -> tuple[FilesToKafkaSettings, RecordConverters]:
    return parse_with_converters(FilesToKafkaSettings, config, CONVERTER_DEFAULTS, "write")


def records(
    rows: DataFrame,
    settings: FilesToKafkaSettings,
    converters: RecordConverters,
    index: int,
    count: int,
    config: Mapping[str, str],
) -> DataFrame:
    """This task's files only, as (origin, topic, key, value) rows for the Kafka sink,
    key and value as the converters write them, after the `transforms` chain of `config`
    if it has one; `ConverterMismatchError` when a converter cannot write what the rows
    (or the chain) hold."""
    from pyspark.sql import functions as f

    file_name = f.col("_metadata.file_name")
    mine = rows.where(f.pmod(f.hash(file_name), f.lit(count)) == index)
    return published_rows(mine, file_name, settings.topic, settings.key_field, converters, config)


class FilesToKafkaTask(Task):
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        """In a session of its own: the unsplit-files setting is this task's only."""
        settings, converters = settings_of(context.task_config)
        index, count = parse_split(context.task_config[SPLIT_KEY])
        routes = known_routes(spark, parse_chain(context.task_config), [settings.topic])
        check_ends(settings, context, routes)
        hold_split(context, count)
        session = spark.newSession()
        session.conf.set("spark.sql.files.maxPartitionBytes", UNSPLIT_FILES)
        schema = input_schema(session, settings)
        rows = (
            _reader(session.readStream, settings)
            .schema(schema)
            .option("maxFilesPerTrigger", settings.max_files_per_trigger)
            .load(settings.input_path)
        )
        if settings.key_field is not None and settings.key_field not in rows.columns:
            raise ValueError(
                f"key.field {settings.key_field!r} is not a column of the input "
                f"({', '.join(rows.columns)})"
            )
        return publish_once(
            records(rows, settings, converters, index, count, context.task_config),
            context,
            settings.connection,
            routes[0],
            settings.trigger_interval_ms,
            settings.exactly_once_support,
            settings.transaction_timeout_ms,
            routed=routes if parse_chain(context.task_config) else (),
        )


class FilesToKafkaConnector(Connector):
    name = "files-to-kafka"
    former_paths = ("worker.connectors.files_to_kafka.FilesToKafkaConnector",)
    config_model = FilesToKafkaSettings
    connector_type = "source"
    input_path_keys = ("input.path",)

    def validate(self, config: Mapping[str, str]) -> BaseModel:
        """The settings, the converters (`worker.records.converters.spec`), and the topic
        creation keys (`worker.kafka.topic_creation`), whose keys are made of group names
        and topic config names and so are no fields; one error names every problem.
        `errors.deadletterqueue.*` keys are a problem: this connector reads no Kafka
        records. `input.schema` nests no deeper than any schema a caller gives
        (`worker.records.nesting`): Spark's parser and pyspark's reading of the type walk
        it by recursion, before the task and at its start."""
        problems: list[ConfigProblem] = []
        settings: BaseModel | None = None
        try:
            settings = parse_config(self.config_model, config)
        except ConnectorConfigError as exc:
            problems.extend(exc.problems)
        try:
            topic_creation(config)
        except ConnectorConfigError as exc:
            problems.extend(exc.problems)
        try:
            record_converters(config, CONVERTER_DEFAULTS, "write")
        except ConnectorConfigError as exc:
            problems.extend(exc.problems)
        problems.extend(not_reading_kafka_problems(config, self.name))
        problems.extend(chain_problems(config))
        schema = config.get(INPUT_SCHEMA_KEY)
        if schema is not None and (too_deep := ddl_nesting_problem(schema)) is not None:
            problems.append(ConfigProblem(INPUT_SCHEMA_KEY, too_deep))
        topic = config.get("topic", "").strip()
        if topic and not is_kafka_name(topic):
            problems.append(ConfigProblem("topic", f"not a Kafka topic name: {KAFKA_NAME_RULE}"))
        if problems or settings is None:
            raise ConnectorConfigError(problems)
        return settings

    def validate_with_spark(self, config: Mapping[str, str], spark: SparkSession) -> None:
        """The converters, and, when `input.schema` says what the rows hold, whether they
        can write it (a string converter and rows of several columns cannot; an Avro
        schema must fit the rows): found before the config is stored, not at a task's
        first batch. An `input.schema` Spark cannot read is the task's to report."""
        settings, converters = settings_of(config)
        if settings.input_schema is None:
            return
        from pyspark.sql.types import StructType, _parse_datatype_string

        try:
            schema = _parse_datatype_string(settings.input_schema)
        except Exception:
            return
        if not isinstance(schema, StructType) or (
            settings.key_field is not None and settings.key_field not in schema.fieldNames()
        ):
            return
        from pyspark.errors import AnalysisException

        empty = spark.createDataFrame([], schema)
        if parse_chain(config):
            _check_chained(empty, settings, converters, config)
            return
        try:
            key, value = encoded_row(schema, settings.key_field, converters)
        except ConverterMismatchError as exc:
            raise ConnectorConfigError([ConfigProblem(exc.key, exc.problem)]) from None
        for spec, column in zip(converters, (key, value), strict=True):
            try:
                _ = empty.select(column).schema  # analysed: what an Avro schema cannot take
            except AnalysisException as exc:
                problem = str(exc).strip().splitlines()[0]
                raise ConnectorConfigError([ConfigProblem(spec.key, problem)]) from None

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return [{**config, SPLIT_KEY: f"{i}/{max_tasks}"} for i in range(max_tasks)]

    def kafka_topics(self, config: Mapping[str, str]) -> Mapping[str, Iterable[str]]:
        return {"topic": [config["topic"].strip()], **routed_topics(config)}

    def create_task(self) -> Task:
        return FilesToKafkaTask()


def _check_chained(
    empty: DataFrame,
    settings: FilesToKafkaSettings,
    converters: RecordConverters,
    config: Mapping[str, str],
) -> None:
    """With a chain, whether it applies to the rows and the converters can write what it
    makes of them, before the config is stored."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as f

    origin = f.lit("")
    try:
        _ = published_rows(empty, origin, settings.topic, settings.key_field, converters, config)
    except ConverterMismatchError as exc:
        raise ConnectorConfigError([ConfigProblem(exc.key, exc.problem)]) from None
    except AnalysisException as exc:
        problem = str(exc).strip().splitlines()[0]
        raise ConnectorConfigError([ConfigProblem("value.converter", problem)]) from None
