"""`kafka-to-delta`: Kafka topics into one Delta Lake table, each record once.

Tasks split the topics' partitions (`worker.connectors.kafka_sink`, which also says how
records are converted, transformed and kept exactly once); every task appends to the
one table at `table.path` through Spark's Delta writer (`worker.connectors.delta.sink`),
the first batch creating it, partitioned by `table.partition.by`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pydantic import Field, field_validator

from worker.connectors.delta.checks import EVOLUTION_KEY, PARTITION_KEY, SchemaEvolution
from worker.connectors.delta.sink import (
    DeltaSink,
    delta_has_batch,
    delta_session,
    refuse_without_delta,
    start_delta_sink,
)
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

WARM_UP_APP_ID: Final = "sparkherd-warm-up"


class KafkaToDeltaSettings(KafkaSinkSettings):
    table_path: NonEmptyStr = Field(alias="table.path")
    table_partition_by: tuple[str, ...] = Field(
        default=(),
        alias=PARTITION_KEY,
        description="Comma-separated columns the table is partitioned by when created",
    )
    schema_evolution: SchemaEvolution = Field(
        default="none",
        alias=EVOLUTION_KEY,
        description="none: a batch with new or retyped columns fails the task; "
        "add-columns: new columns are added to the table",
    )

    @field_validator("table_partition_by", mode="before")
    @classmethod
    def _split_columns(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        columns = [c.strip() for c in value.split(",") if c.strip()]
        twice = sorted({c for c in columns if [n.lower() for n in columns].count(c.lower()) > 1})
        if twice:
            raise ValueError(f"names {', '.join(twice)} more than once")
        return tuple(columns)


def settings_of(config: Mapping[str, str]) -> tuple[KafkaToDeltaSettings, RecordConverters]:
    return sink_settings(KafkaToDeltaSettings, config)


class KafkaToDeltaTask(Task):
    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        settings, converters = settings_of(context.task_config)
        records = sink_records(
            spark,
            context,
            settings,
            converters,
            partial(delta_has_batch, spark, settings.table_path),
        )
        sink = DeltaSink(
            delta_session(records.rows),
            settings.table_path,
            settings.table_partition_by,
            settings.schema_evolution,
            context.checkpoint_dir,
        )
        return start_delta_sink(
            records.rows, context, sink, settings.trigger_interval_ms, records.step
        )


class KafkaToDeltaConnector(KafkaSinkConnector):
    name = "kafka-to-delta"
    former_paths = ("worker.connectors.kafka_to_delta.KafkaToDeltaConnector",)
    config_model = KafkaToDeltaSettings
    output_path_keys = ("table.path",)
    checkpoint_keys = ("table.path",)

    @classmethod
    def warm_up(cls, spark: SparkSession, scratch: Path) -> None:
        """A batch of one row through the task's own sink into a table in `scratch`: its
        checks of the table, then its append under a transaction id. The checkpoint is
        one of Spark's as far as the sink reads it (`<checkpoint>/metadata` with its id)."""
        rows = spark.newSession().range(1)
        refuse_without_delta(rows.sparkSession)
        checkpoint = scratch / "checkpoint"
        checkpoint.mkdir()
        (checkpoint / "metadata").write_text(json.dumps({"id": WARM_UP_APP_ID}) + "\n")
        sink = DeltaSink(delta_session(rows), str(scratch / "table"), (), "none", checkpoint)
        sink.write(rows, 0)

    def create_task(self) -> Task:
        return KafkaToDeltaTask()
