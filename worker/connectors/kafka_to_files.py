"""`kafka-to-files`: Kafka topics into parquet, json or csv files, each record once.

Tasks split the topics' partitions; task `i` reads its partitions and writes
`<output.path>/task-<i>` through Spark's file sink. Exactly once comes from Spark:
the offsets of a batch are in the task's checkpoint before the batch runs, a batch that
has to run again (after a crash, on another worker) reads the same offsets, and the file
sink's log commits each batch once. Kafka's consumer groups are not used at all.

A partition's position therefore lives in the checkpoint of the task that read it, so
the split must not move a partition that a task has read to another task: partitions
are split by a rule that keeps every existing partition where it is when partitions are
added, and a task that is given a partition another task's checkpoint holds refuses to
start (changing `tasks.max` does that) instead of reading it twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Literal

from aiokafka import TopicPartition
from pydantic import Field, field_validator

from worker.checkpoint_offsets import committed_offsets
from worker.connectors.file_sink import start_file_sink
from worker.kafka.connection import KafkaConnectionSettings
from worker.kafka.source import SCHEMA, format_assignment, parse_assignment
from worker.kafka.spark_io import KafkaClientChoice, read_kafka
from worker.plugins import (
    JAVA_INT_MAX,
    ConfigProblem,
    Connector,
    ConnectorConfigError,
    NonEmptyStr,
    Task,
    TaskContext,
    parse_config,
)
from worker.sql_policy import QueryNotAllowed, analyze_query, checked_query, query_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

ASSIGN_KEY: Final = "kafka.assign"
TRANSFORM_KEY: Final = "transform.sql"
SOURCE_VIEW: Final = "source"
DEFAULT_TRANSFORM: Final = (
    "SELECT CAST(key AS STRING) AS key, CAST(value AS STRING) AS value, "
    "topic, partition, offset, timestamp FROM source"
)


class KafkaToFilesSettings(KafkaConnectionSettings):
    topics: tuple[str, ...] = Field(alias="topics")
    output_path: NonEmptyStr = Field(alias="output.path")
    output_format: Literal["parquet", "json", "csv"] = Field(
        default="parquet", alias="output.format"
    )
    transform_sql: NonEmptyStr = Field(
        default=DEFAULT_TRANSFORM,
        alias=TRANSFORM_KEY,
        description="One query over the view `source` (Spark's Kafka schema): built-in "
        "functions only, no commands, no other tables or files",
    )
    starting_offsets: Literal["earliest", "latest"] = Field(
        default="earliest", alias="starting.offsets"
    )
    kafka_client: KafkaClientChoice = Field(default="auto", alias="kafka.client")
    trigger_interval_ms: int = Field(
        default=1000, alias="trigger.interval.ms", ge=100, le=JAVA_INT_MAX
    )

    @field_validator("topics", mode="before")
    @classmethod
    def _split_topics(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise ValueError("name at least one topic")
        return topics


def split_partitions(
    partitions: Mapping[str, list[int]], topics: tuple[str, ...], max_tasks: int
) -> list[list[TopicPartition]]:
    """Partition `p` of the `j`-th topic goes to task `(j + p) % max_tasks`: adding
    partitions or appending topics never moves a partition already assigned. Tasks left
    without partitions are not created."""
    tasks: list[list[TopicPartition]] = [[] for _ in range(max_tasks)]
    for j, topic in enumerate(topics):
        for p in partitions[topic]:
            tasks[(j + p) % max_tasks].append(TopicPartition(topic, p))
    return [assigned for assigned in tasks if assigned]


class PartitionMovedError(RuntimeError):
    """A partition given to this task was read by another task of the same connector."""


def check_not_read_elsewhere(context: TaskContext, assigned: list[TopicPartition]) -> None:
    mine = {(tp.topic, str(tp.partition)) for tp in assigned}
    for task, checkpoint in context.connector_checkpoints().items():
        if task == context.task:
            continue
        for source in committed_offsets(checkpoint, task):
            held = {
                (topic, partition)
                for topic, positions in source.offset.items()
                for partition in positions
            }
            moved = sorted(mine & held)
            if moved:
                names = ", ".join(f"{topic}:{partition}" for topic, partition in moved)
                raise PartitionMovedError(
                    f"Partitions {names} were read by task {task} of connector "
                    f"{context.connector}, whose checkpoint holds their position; reading "
                    "them here would duplicate or skip records. The split changed (did "
                    "tasks.max change?): restore it, or stop the connector, reset its "
                    "offsets and write to a new output.path"
                )


class KafkaToFilesTask(Task):
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        """In a session of its own, so `transform.sql`'s view named `source` is this
        task's and no other's (sessions share the SparkContext, not temporary views);
        the query is checked again, as admission did, against the real view."""
        settings = parse_config(KafkaToFilesSettings, context.task_config)
        assigned = parse_assignment(context.task_config[ASSIGN_KEY])
        check_not_read_elsewhere(context, assigned)
        session = query_session(spark)
        records = read_kafka(
            session,
            settings.connection,
            assigned,
            settings.starting_offsets,
            settings.kafka_client,
        )
        return start_file_sink(
            checked_query(session, settings.transform_sql, {SOURCE_VIEW: records}),
            context,
            settings.output_path,
            settings.output_format,
            settings.trigger_interval_ms,
        )


class KafkaToFilesConnector(Connector):
    name = "kafka-to-files"
    config_model = KafkaToFilesSettings
    connector_type = "sink"
    output_path_keys = ("output.path",)
    checkpoint_keys = ("output.path",)
    task_configs_refresh_ms = 30_000
    """New partitions are picked up within this long; existing ones never move."""

    def validate_with_spark(self, config: Mapping[str, str], spark: SparkSession) -> None:
        """`transform.sql` is a query over `source`, never a program: checked before it is
        stored, and again by the task before it runs."""
        settings = parse_config(KafkaToFilesSettings, config)
        try:
            analyze_query(spark, settings.transform_sql, {SOURCE_VIEW: SCHEMA})
        except QueryNotAllowed as exc:
            raise ConnectorConfigError([ConfigProblem(TRANSFORM_KEY, str(exc))]) from None

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        settings = parse_config(KafkaToFilesSettings, config)
        with settings.connection.open("sparkherd-kafka-to-files") as kafka:
            partitions = {topic: kafka.partitions(topic) for topic in settings.topics}
        return [
            {**config, ASSIGN_KEY: format_assignment(assigned)}
            for assigned in split_partitions(partitions, settings.topics, max_tasks)
        ]

    def create_task(self) -> Task:
        return KafkaToFilesTask()
