"""`kafka-to-files`: Kafka topics into parquet, json or csv files, each record once.

Tasks split the topics' partitions (`worker.connectors.kafka_sink`, which also says how
records are converted, transformed and kept exactly once); task `i` writes
`<output.path>/task-<i>` through Spark's file sink (`worker.connectors.files.file_sink`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from worker.connectors.files.file_sink import sink_has_batch, start_file_sink
from worker.connectors.kafka_sink import (
    KafkaSinkConnector,
    KafkaSinkSettings,
    sink_records,
    sink_settings,
)
from worker.plugins.api import NonEmptyStr, Task, TaskContext
from worker.records.converters.spec import RecordConverters

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery


class KafkaToFilesSettings(KafkaSinkSettings):
    output_path: NonEmptyStr = Field(alias="output.path")
    output_format: Literal["parquet", "json", "csv"] = Field(
        default="parquet", alias="output.format"
    )


def settings_of(config: Mapping[str, str]) -> tuple[KafkaToFilesSettings, RecordConverters]:
    return sink_settings(KafkaToFilesSettings, config)


class KafkaToFilesTask(Task):
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        settings, converters = settings_of(context.task_config)
        records = sink_records(
            spark,
            context,
            settings,
            converters,
            partial(sink_has_batch, spark, settings.output_path),
        )
        return start_file_sink(
            records.rows,
            context,
            settings.output_path,
            settings.output_format,
            settings.trigger_interval_ms,
            records.step,
        )


class KafkaToFilesConnector(KafkaSinkConnector):
    name = "kafka-to-files"
    former_paths = ("worker.connectors.kafka_to_files.KafkaToFilesConnector",)
    config_model = KafkaToFilesSettings
    output_path_keys = ("output.path",)
    checkpoint_keys = ("output.path",)

    def create_task(self) -> Task:
        return KafkaToFilesTask()
