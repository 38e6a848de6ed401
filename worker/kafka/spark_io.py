"""How tasks read and write Kafka in Spark.

Reading: Spark's JVM connector when its jar is on the classpath, otherwise the
`sparkherd-kafka` Python data source. Writing: always `sparkherd-kafka`, because Spark's
JVM Kafka sink is at-least-once (a batch run again after a crash is sent again) and the
Python sink sends each row once, inside Kafka transactions where the broker has them
(see `sink.py` and `transactions.py`).

The JVM connector is Spark's own, faster and battle-tested, but it is a Maven artifact
(`spark-sql-kafka-0-10`) that pip cannot install; the Python source makes a fresh
`pip install` work. Both read the same schema and checkpoint offsets of the same JSON
shape, and both leave the task's position in its checkpoint only, never in a consumer
group, which is what lets a file sink commit each record once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Literal

from aiokafka import TopicPartition
from pyspark.errors import AnalysisException

from worker.kafka.batch_bound import BatchBound
from worker.kafka.connection import KafkaConnection
from worker.kafka.data_source import FORMAT, KafkaDataSource
from worker.kafka.sink import TRANSACTION_TIMEOUT_MS
from worker.kafka.source import (
    INCLUDE_HEADERS,
    MAX_OFFSETS_PER_BATCH,
    RESUME_OFFSETS,
    format_assignment,
)
from worker.kafka.transactions import ExactlyOnceSupport, TransactionalIds, fence_earlier_producers
from worker.plugins.api import TaskContext

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.datasource import DataSource
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

INTENTS_DIR: Final = "kafka-intents"

KafkaClientChoice = Literal["auto", "jvm", "python"]
JVM_FORMAT: Final = "kafka"
MISSING_SOURCE: Final = frozenset({"DATA_SOURCE_NOT_FOUND", "_LEGACY_ERROR_TEMP_1140"})
"""Spark 4.0 reports a missing `kafka` source under its legacy condition (with a hint to
deploy the connector), any other missing source under the first."""


class JvmKafkaMissingError(RuntimeError):
    def __init__(self) -> None:
        super().__init__(
            "kafka.client=jvm needs Spark's Kafka connector on the worker's classpath: set "
            "spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version> "
            "or spark.jars in the worker config, or use kafka.client=auto or python"
        )


def read_kafka(
    spark: SparkSession,
    connection: KafkaConnection,
    partitions: Sequence[TopicPartition],
    starting_offsets: str,
    client: KafkaClientChoice,
    headers: bool = False,
    bound: BatchBound | None = None,
) -> DataFrame:
    """A streaming DataFrame of the given partitions, with Spark's Kafka schema (and,
    with `headers`, the records' headers as Spark's JVM source gives them: a `headers`
    column of (key STRING, value BINARY) structs, from either source). `starting_offsets`
    is `earliest`, `latest` or, for each partition, where to start as Spark's JVM source
    reads it (`{"<topic>": {"<partition>": <offset>}}`, -2 earliest, -1 latest); `bound`
    caps each micro-batch (`worker.kafka.batch_bound`)."""
    if client != "python":
        try:
            return _read_jvm(spark, connection, partitions, starting_offsets, headers, bound)
        except AnalysisException as exc:
            if exc.getCondition() not in MISSING_SOURCE:
                raise
            if client == "jvm":
                raise JvmKafkaMissingError() from exc
    register(spark)
    limits = {}
    if bound is not None:
        limits[MAX_OFFSETS_PER_BATCH] = str(bound.max_offsets)
        if bound.resume is not None:
            limits[RESUME_OFFSETS] = bound.resume
    return (
        spark.readStream.format(FORMAT)
        .options(**connection.source_options())
        .option("assign", format_assignment(partitions))
        .option("starting.offsets", starting_offsets)
        .option(INCLUDE_HEADERS, str(headers).lower())
        .options(**limits)
        .load()
    )


def _read_jvm(
    spark: SparkSession,
    connection: KafkaConnection,
    partitions: Sequence[TopicPartition],
    starting_offsets: str,
    headers: bool,
    bound: BatchBound | None,
) -> DataFrame:
    assign: dict[str, list[int]] = {}
    for tp in partitions:
        assign.setdefault(tp.topic, []).append(tp.partition)
    limits = {} if bound is None else {"maxOffsetsPerTrigger": str(bound.max_offsets)}
    return (
        spark.readStream.format(JVM_FORMAT)
        .options(**connection.jvm_options())
        .option("assign", json.dumps(assign))
        .option("startingOffsets", starting_offsets)
        .option("failOnDataLoss", "true")
        .option("includeHeaders", str(headers).lower())
        .options(**limits)
        .load()
    )


def register(session: SparkSession, source: type[DataSource] = KafkaDataSource) -> None:
    """Once per session: Spark refuses a second registration of a name (and a session
    made by `newSession` may already see its parent's)."""
    try:
        session.dataSource.register(source)
    except AnalysisException as exc:
        if exc.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise


def _started_in_own_session(writer: DataStreamWriter, session: SparkSession) -> StreamingQuery:
    """Spark 4.0 looks a streaming writer's format up in the thread's active session, not
    in the DataFrame's (a reader's in the reader's own), and a task in a session of its
    own must find the source it registered there. PySpark sets the active session the
    same way itself; it is cleared again, as this thread is a pooled one."""
    from pyspark.sql import SparkSession

    sessions = SparkSession._get_j_spark_session_class(session._jvm)
    sessions.setActiveSession(session._jsparkSession)
    try:
        return writer.start()
    finally:
        sessions.clearActiveSession()


def publish_once(
    rows: DataFrame,
    context: TaskContext,
    connection: KafkaConnection,
    topic: str,
    interval_ms: int,
    exactly_once: ExactlyOnceSupport = "requested",
    transaction_timeout_ms: int = TRANSACTION_TIMEOUT_MS,
    routed: Sequence[str] = (),
) -> StreamingQuery:
    """Send `rows` (columns origin, key, value) to `topic`, each row once, every
    `interval_ms`; the dedup intents and transactional ids live in the task's checkpoint.
    With `routed`, the topics rows may go to instead, `rows` has a `topic` column too.

    Before the query runs a batch again, every producer an earlier start of the task
    used is fenced, which also tells whether the broker has transactions at all."""
    progress = context.checkpoint_dir / INTENTS_DIR
    ids = TransactionalIds(progress)
    prefix = ids.prefix(context.query_name)
    transactional = fence_earlier_producers(
        connection, ids.used(prefix), transaction_timeout_ms, exactly_once
    )
    register(rows.sparkSession)
    writer = (
        rows.writeStream.format(FORMAT)
        .options(**connection.source_options())
        .option("topic", topic)
        .option("sink.id", context.query_name)
        .option("progress.dir", str(progress))
        .option("checkpointLocation", str(context.checkpoint_dir))
        .queryName(context.query_name)
        .trigger(processingTime=f"{interval_ms} milliseconds")
    )
    if routed:
        writer = writer.option("topics", ",".join(routed))
    if transactional:
        writer = writer.option("transactional.id.prefix", prefix).option(
            "transaction.timeout.ms", str(transaction_timeout_ms)
        )
    if context.claim is not None:
        writer = writer.option("claim", context.claim.encode())
    return _started_in_own_session(writer, rows.sparkSession)
