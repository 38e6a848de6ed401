"""What every connector that reads Kafka into a sink shares: `topics`, `kafka.*`,
`transform.sql` and Connect's converter and `errors.*` keys, the split of partitions into
tasks, and each task's records, converted and ready for its sink's commits.

Exactly once comes from Spark: the offsets of a batch are in the task's checkpoint before
the batch runs, a batch that has to run again (after a crash, on another worker) reads
the same offsets, and the sink commits each batch id once. Kafka's consumer groups are
not used at all.

Keys and values go through Connect's converters (`worker.records.converters`), bytes by default
(what Spark's Kafka source gives), then through Connect's `transforms` chain if the config
has one (`worker.records.transforms.sink_chain`: a record it fails is handled as one that
cannot be converted, stage TRANSFORMATION); `transform.sql` sees them in `source`, run
per batch in `foreachBatch` (`worker.records.errors`). A record that cannot be converted,
or that `transform.sql` fails on, fails the task naming the record (Connect's
`errors.tolerance=none`, the default: `strict_batches`). With `errors.tolerance=all` it
is taken out of its batch, sent to the dead letter queue if one is named, and counted,
and the rest of the batch is committed (`tolerant_batches`, which also says why both
outputs get each record once).

A partition's position therefore lives in the checkpoint of the task that read it.
Partitions are split by a rule that keeps every existing partition where it is when
partitions are added; when `tasks.max` changes they move, and a task given partitions
that other checkpoints hold takes each over at the offset committed there
(`worker.connectors.partition_takeover`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeVar

from aiokafka import TopicPartition
from pydantic import BaseModel, Field, field_validator

from worker.connectors.claimed_batches import BatchStep
from worker.connectors.partition_takeover import SinkHasBatch, batch_bound, starting_offsets
from worker.connectors.source_view import source_schema, unreadable_schemas
from worker.kafka.connection import KafkaConnectionSettings
from worker.kafka.source import format_assignment, parse_assignment
from worker.kafka.spark_io import KafkaClientChoice, read_kafka
from worker.plugins.api import (
    JAVA_INT_MAX,
    ConfigProblem,
    Connector,
    ConnectorConfigError,
    NonEmptyStr,
    TaskContext,
)
from worker.plugins.internal_topics import internal_topics
from worker.plugins.topic_patterns import compiled_pattern, pattern_problem
from worker.records.converters.payload_types import SAMPLE_RECORDS, declared_type, task_payload_type
from worker.records.converters.records import (
    SAMPLE_WITHIN_S,
    PayloadTypes,
    decode_records,
    failing_on_errors,
    first_records,
)
from worker.records.converters.spec import DecodingSettings, RecordConverters, parse_with_converters
from worker.records.errors.dead_letter_queue import DeadLetterQueue
from worker.records.errors.failed_records import PutFailed
from worker.records.errors.settings import (
    DLQ_TOPIC_KEY,
    ErrorHandlingSettings,
    error_handling_problems,
)
from worker.records.errors.strict_batches import StrictBatches
from worker.records.errors.tolerant_batches import TolerantBatches
from worker.records.sql_policy import (
    QueryNotAllowed,
    analyze_query,
    check_query,
    checked_query,
    query_session,
)
from worker.records.transforms.config import chain_problems, routed_topics
from worker.records.transforms.sink_chain import chained_records, chained_types, reads_headers

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

ASSIGN_KEY: Final = "kafka.assign"
TOPICS_KEY: Final = "topics"
TOPICS_REGEX_KEY: Final = "topics.regex"
TRANSFORM_KEY: Final = "transform.sql"
SOURCE_VIEW: Final = "source"
CONVERTER_DEFAULTS: Final = {"key.converter": "bytes", "value.converter": "bytes"}
"""Spark's Kafka columns as they are: what these connectors read before converters."""


def default_transform(converters: RecordConverters) -> str:
    """Without `transform.sql`: key and value as strings when they are bytes (as before
    converters), as converted otherwise, with topic, partition, offset and timestamp."""
    key, value = (
        f"CAST({spec.side} AS STRING) AS {spec.side}" if spec.kind == "bytes" else spec.side
        for spec in converters
    )
    return f"SELECT {key}, {value}, topic, partition, offset, timestamp FROM source"


class KafkaSinkSettings(KafkaConnectionSettings, DecodingSettings, ErrorHandlingSettings):
    topics: tuple[str, ...] = Field(
        default=(), alias=TOPICS_KEY, description="The topics to read, comma-separated"
    )
    topics_regex: str | None = Field(
        default=None,
        alias=TOPICS_REGEX_KEY,
        description="Instead of topics: every topic whose whole name this regular "
        "expression (RE2) matches, new ones within 30 s, never the worker's own",
    )
    transform_sql: NonEmptyStr | None = Field(
        default=None,
        alias=TRANSFORM_KEY,
        description="One query over the view `source` (Spark's Kafka schema, key and value "
        "converted): built-in functions only, no commands, no other tables or files",
    )
    starting_offsets: Literal["earliest", "latest"] = Field(
        default="earliest", alias="starting.offsets"
    )
    kafka_client: KafkaClientChoice = Field(default="auto", alias="kafka.client")
    trigger_interval_ms: int = Field(
        default=1000, alias="trigger.interval.ms", ge=100, le=JAVA_INT_MAX
    )
    batch_max_records: int = Field(
        default=500_000,
        alias="batch.max.records",
        ge=1,
        le=JAVA_INT_MAX,
        description="The most Kafka offsets one micro-batch reads, so that a backlog of any "
        "size is read in bounded batches (Spark's maxOffsetsPerTrigger)",
    )

    @field_validator("topics", mode="before")
    @classmethod
    def _split_topics(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        return tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))

    @field_validator("topics_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        problem = None if value is None else pattern_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @property
    def read_topics(self) -> TopicChoice:
        return TopicChoice(self.topics, self.topics_regex)


@dataclass(frozen=True)
class TopicChoice:
    """The topics a sink reads: those named, or those a regex matches. `in` says whether
    it reads a topic (a dead letter queue must not be one)."""

    named: tuple[str, ...]
    regex: str | None

    def __contains__(self, topic: object) -> bool:
        if not isinstance(topic, str):
            return False
        if self.regex is None:
            return topic in self.named
        return compiled_pattern(self.regex).fullmatch(topic) is not None

    def problem(self) -> ConfigProblem | None:
        """Connect's rule: exactly one of `topics` and `topics.regex`."""
        if bool(self.named) == (self.regex is not None):
            return ConfigProblem(
                TOPICS_KEY, f"set exactly one of {TOPICS_KEY} and {TOPICS_REGEX_KEY}"
            )
        return None

    def matching(self, present: Iterable[str], internal: frozenset[str]) -> tuple[str, ...]:
        """The topics to read of those `present` on the broker: the named ones in their
        order, or the regex's matches by name, the worker's `internal` topics never."""
        if self.regex is None:
            return self.named
        return tuple(sorted(t for t in set(present) - internal if t in self))


def split_partitions(
    partitions: Mapping[str, list[int]], slots: Mapping[str, int], max_tasks: int
) -> list[list[TopicPartition]]:
    """Partition `p` of a topic whose slot is `j` goes to task `(j + p) % max_tasks`: a
    topic's slot never changes (`topic_slots`), so adding partitions or topics never moves
    a partition already assigned. Tasks left without partitions are not created."""
    tasks: list[list[TopicPartition]] = [[] for _ in range(max_tasks)]
    for topic, j in slots.items():
        for p in partitions[topic]:
            tasks[(j + p) % max_tasks].append(TopicPartition(topic, p))
    return [assigned for assigned in tasks if assigned]


def assigned_topics(task_config: Mapping[str, str]) -> list[str]:
    """The topics of a task's partitions (`kafka.assign`), each once, in order; a
    `ValueError` if the value is not `topic:partition,...`."""
    return list(dict.fromkeys(tp.topic for tp in parse_assignment(task_config[ASSIGN_KEY])))


def topic_slots(choice: TopicChoice, topics: tuple[str, ...]) -> dict[str, int]:
    """Named topics by their place in `topics` (appending one moves nothing); a regex's
    by a hash of the name, since a new match may sort anywhere among the old ones."""
    if choice.regex is None:
        return {topic: j for j, topic in enumerate(topics)}
    return {topic: zlib.crc32(topic.encode()) for topic in topics}


S = TypeVar("S", bound=KafkaSinkSettings)


def sink_settings(model: type[S], config: Mapping[str, str]) -> tuple[S, RecordConverters]:
    """The settings and converters, with every problem of either and of the error
    handling keys (`worker.records.errors.settings`) in one error."""
    try:
        parsed = parse_with_converters(model, config, CONVERTER_DEFAULTS, "read")
    except ConnectorConfigError as exc:
        topics = [t.strip() for t in config.get(TOPICS_KEY, "").split(",")]
        problems = error_handling_problems(config, topics) + chain_problems(config)
        raise ConnectorConfigError([*exc.problems, *problems]) from None
    choice = parsed[0].read_topics
    problems = error_handling_problems(config, choice) + chain_problems(config)
    if (problem := choice.problem()) is not None:
        problems.insert(0, problem)
    if problems:
        raise ConnectorConfigError(problems)
    return parsed


@dataclass(frozen=True)
class SinkRecords:
    """A task's records and what each batch goes through before its sink commits it."""

    rows: DataFrame
    """The converted records (the `source` view's rows), streaming."""
    step: BatchStep
    """`transform.sql` per batch, strictly or tolerating errors; calls the commit."""
    put_failed: PutFailed
    """For a sink that finds records it cannot write while it commits a batch: fails
    the task naming one, or sends them to the dead letter queue, as `errors.tolerance`
    says."""


def sink_records(
    spark: SparkSession,
    context: TaskContext,
    settings: KafkaSinkSettings,
    converters: RecordConverters,
    sink_has_batch: SinkHasBatch | None = None,
) -> SinkRecords:
    """In a session of its own, so `transform.sql`'s view named `source` is this task's
    and no other's (sessions share the SparkContext, not temporary views); the query is
    checked again, as admission did, against the real view. A sink may set what it needs
    in `rows.sparkSession` (its catalog), which is this task's alone.

    Partitions that moved here from other tasks start where those tasks' checkpoints
    committed them; `sink_has_batch` says whether the sink holds a batch a checkpoint
    planned but did not log as committed (without it, such a batch fails the start)."""
    assigned = parse_assignment(context.task_config[ASSIGN_KEY])
    starting = starting_offsets(context, assigned, settings.starting_offsets, sink_has_batch)
    session = query_session(spark)
    dead_letter_queue = DeadLetterQueue.open(settings.connection, settings, context)
    records = read_kafka(
        session,
        settings.connection,
        assigned,
        starting,
        settings.kafka_client,
        headers=dead_letter_queue is not None or reads_headers(context.task_config),
        bound=batch_bound(context.checkpoint_dir, settings.batch_max_records),
    )
    key, value = (
        task_payload_type(
            spec,
            session,
            context.checkpoint_dir,
            partial(
                first_records,
                settings.connection,
                assigned,
                spec.side,
                SAMPLE_RECORDS,
                min(SAMPLE_WITHIN_S, context.deadline.remaining()),
            ),
        )
        for spec in converters
    )
    decoded = decode_records(records, converters, PayloadTypes(key, value))
    decoded = chained_records(decoded, context.task_config, converters, session)
    sql = settings.transform_sql or default_transform(converters)
    # The query is checked against the streaming view, and refused where a streaming
    # query would refuse it (an aggregation without a watermark): each batch then runs
    # it over the batch's records, so that a failure can be traced to its record.
    rows = checked_query(session, sql, {SOURCE_VIEW: failing_on_errors(decoded)})
    refuse_unsupported_streaming(rows)
    step = (
        TolerantBatches(sql, SOURCE_VIEW, converters, settings, context, dead_letter_queue)
        if settings.errors_tolerance == "all"
        else StrictBatches(sql, SOURCE_VIEW, context.query_name)
    )
    return SinkRecords(decoded, step, step.put_failed)


class KafkaSinkConnector(Connector):
    """A connector from Kafka topics into a sink: validation, `transform.sql`'s checks
    and the split of partitions; a subclass names its settings and makes its tasks."""

    config_model: ClassVar[type[KafkaSinkSettings]]
    connector_type = "sink"
    task_configs_refresh_ms = 30_000
    """New partitions are picked up within this long; existing ones never move."""

    def settings(self, config: Mapping[str, str]) -> tuple[KafkaSinkSettings, RecordConverters]:
        return sink_settings(self.config_model, config)

    def validate(self, config: Mapping[str, str]) -> BaseModel:
        return self.settings(config)[0]

    def validate_with_spark(self, config: Mapping[str, str], spark: SparkSession) -> None:
        """`transform.sql` is a query over `source`, never a program: checked before it is
        stored, and again by the task before it runs. It is analysed against the
        converted key and value where the config says their types; a json payload whose
        type comes from the data is known only when the task starts, and the query is
        only parsed here."""
        settings, converters = self.settings(config)
        key, value = (declared_type(spec, spark) for spec in converters)
        types = PayloadTypes(key, value)
        unreadable = unreadable_schemas(spark, converters, types)
        if unreadable:
            raise ConnectorConfigError(unreadable)
        types = chained_types(spark, config, converters, types)
        sql = settings.transform_sql or default_transform(converters)
        try:
            if types.known:
                rows = analyze_query(spark, sql, {SOURCE_VIEW: source_schema(types)})
            else:
                check_query(spark, sql, [SOURCE_VIEW])
        except QueryNotAllowed as exc:
            raise ConnectorConfigError([ConfigProblem(TRANSFORM_KEY, str(exc))]) from None
        if types.known:
            problem = self.rows_problem(config, rows)
            if problem is not None:
                key = TRANSFORM_KEY if settings.transform_sql else "value.converter"
                raise ConnectorConfigError([ConfigProblem(key, problem)])

    def rows_problem(self, config: Mapping[str, str], rows: StructType) -> str | None:
        """Why the sink cannot write rows of this schema (what `transform.sql`, or the
        default transform, makes of the converted records), when known before they come:
        None by default."""
        return None

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        settings, _ = self.settings(config)
        choice = settings.read_topics
        with settings.connection.open(f"sparkherd-{self.name}") as kafka:
            present = kafka.topics() if choice.regex is not None else ()
            topics = choice.matching(present, internal_topics(config))
            partitions = {topic: kafka.partitions(topic) for topic in topics}
        slots = topic_slots(choice, topics)
        return [
            {**config, ASSIGN_KEY: format_assignment(assigned)}
            for assigned in split_partitions(partitions, slots, max_tasks)
        ]

    def kafka_topics(self, config: Mapping[str, str]) -> Mapping[str, Iterable[str]]:
        """The topics named, the dead letter queue, and a task's assigned partitions'."""
        settings, _ = self.settings(config)
        named: dict[str, Iterable[str]] = {
            TOPICS_KEY: settings.topics,
            DLQ_TOPIC_KEY: [settings.errors_deadletterqueue_topic_name],
            **routed_topics(config),
        }
        if ASSIGN_KEY in config:
            try:
                named[ASSIGN_KEY] = assigned_topics(config)
            except ValueError as exc:
                raise ConnectorConfigError([ConfigProblem(ASSIGN_KEY, str(exc))]) from None
        return named


def refuse_unsupported_streaming(rows: DataFrame) -> None:
    """Spark's own check of what a streaming query may do in append mode, which a query
    run per batch inside `foreachBatch` would otherwise skip."""
    jvm: Any = rows.sparkSession._jvm
    plan = rows._jdf.queryExecution().analyzed()
    append = jvm.org.apache.spark.sql.streaming.OutputMode.Append()
    jvm.org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker.checkForStreaming(
        plan, append
    )
