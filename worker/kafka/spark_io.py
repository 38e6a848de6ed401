"""Which Spark Kafka reader a task gets: Spark's JVM connector when its jar is on the
classpath, otherwise the `sparkherd-kafka` Python data source.

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

from worker.kafka.source import FORMAT, KafkaDataSource, format_assignment

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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
    bootstrap_servers: str,
    partitions: Sequence[TopicPartition],
    starting_offsets: Literal["earliest", "latest"],
    client: KafkaClientChoice,
) -> DataFrame:
    """A streaming DataFrame of the given partitions, with Spark's Kafka schema."""
    if client != "python":
        try:
            return _read_jvm(spark, bootstrap_servers, partitions, starting_offsets)
        except AnalysisException as exc:
            if exc.getCondition() not in MISSING_SOURCE:
                raise
            if client == "jvm":
                raise JvmKafkaMissingError() from exc
    spark.dataSource.register(KafkaDataSource)
    return (
        spark.readStream.format(FORMAT)
        .option("bootstrap.servers", bootstrap_servers)
        .option("assign", format_assignment(partitions))
        .option("starting.offsets", starting_offsets)
        .load()
    )


def _read_jvm(
    spark: SparkSession,
    bootstrap_servers: str,
    partitions: Sequence[TopicPartition],
    starting_offsets: str,
) -> DataFrame:
    assign: dict[str, list[int]] = {}
    for tp in partitions:
        assign.setdefault(tp.topic, []).append(tp.partition)
    return (
        spark.readStream.format(JVM_FORMAT)
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("assign", json.dumps(assign))
        .option("startingOffsets", starting_offsets)
        .option("failOnDataLoss", "true")
        .load()
    )
