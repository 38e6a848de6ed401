"""`generator`: a source of contiguous numbered rows, for demos, tests and benchmarks.

It exists to make the framework's promises visible: every task writes `seq` 0, 1, 2, ...
of its own, so a gap or a duplicate after a rebalance, a stop or a worker crash shows up
in the output. Spark's `rate-micro-batch` source numbers rows by batch, and its offsets
live in the checkpoint; the file sink commits each batch once. A restarted task, on any
worker sharing `checkpoint.root`, therefore continues the sequence exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pyspark.sql import functions as F

from worker.connectors.files.file_sink import start_file_sink
from worker.plugins.api import (
    JAVA_INT_MAX,
    Connector,
    ConnectorConfigError,
    NonEmptyStr,
    Task,
    TaskContext,
    parse_config,
)
from worker.records.errors.settings import not_reading_kafka_problems
from worker.records.transforms.config import no_chain_problems

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession
    from pyspark.sql.streaming import StreamingQuery


class GeneratorSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    rows_per_second: int = Field(default=10, alias="rows.per.second", gt=0, le=JAVA_INT_MAX)
    batch_interval_ms: int = Field(default=1000, alias="batch.interval.ms", ge=100, le=JAVA_INT_MAX)
    output_path: NonEmptyStr = Field(alias="output.path")
    output_format: Literal["parquet", "json"] = Field(default="parquet", alias="output.format")

    @property
    def rows_per_batch(self) -> int:
        return max(1, self.rows_per_second * self.batch_interval_ms // 1000)


BATCH_TIME_SQL: Final = (
    "timestamp_micros(cast("
    "java_method('java.lang.String', 'valueOf', unix_micros(current_timestamp())) as bigint))"
)


def batch_time() -> Column:
    """The batch's processing time (`current_timestamp()`), the same for every row of a
    batch, computed so that Spark compiles the batch's code once, not every batch.

    Spark makes `current_timestamp()` a literal per batch, and whole-stage code
    generation writes a timestamp literal into the Java code it compiles; a new literal
    is new code, so every batch of a generator cost a compilation (Janino, then the
    JIT): about 40 ms of a light batch's driver CPU, a third of it
    (`tests/bench/light_batch_cost.py`, issue 34). `java_method` is evaluated without
    generated code, holding its argument (the literal) outside the code, which then is
    the same every batch; it hands the microseconds over as text, turned back exactly."""
    return F.expr(BATCH_TIME_SQL)


class GeneratorTask(Task):
    """Writes rows (task, seq, ts) to `<output.path>/task-<i>`, one micro-batch every
    `batch.interval.ms`.

    A batch holds `rows.per.second` x the interval rows; when batches take longer than the
    interval the rate drops rather than the sequence skipping. Longer intervals cost
    Spark less per row. `ts` is the batch's processing time. Changing either setting of a
    connector that already has checkpoints breaks the contiguity of its sequence, since
    the source numbers rows by batch.
    """

    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        settings = parse_config(GeneratorSettings, context.task_config)
        rows = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", settings.rows_per_batch)
            .option("numPartitions", 1)
            .load()
            .select(
                F.lit(context.task).cast("int").alias("task"),
                F.col("value").cast("long").alias("seq"),
                batch_time().alias("ts"),
            )
        )
        return start_file_sink(
            rows, context, settings.output_path, settings.output_format, settings.batch_interval_ms
        )


class GeneratorConnector(Connector):
    """`tasks.max` independent tasks, each with its own sequence and output directory."""

    name = "generator"
    config_model = GeneratorSettings
    connector_type = "source"
    output_path_keys = ("output.path",)
    checkpoint_keys = ("output.path",)

    def validate(self, config: Mapping[str, str]) -> BaseModel:
        """The settings, and no `errors.deadletterqueue.*` or `transforms` key: no Kafka
        record is read or written."""
        problems = not_reading_kafka_problems(config, self.name)
        problems += no_chain_problems(config, self.name)
        try:
            settings = parse_config(self.config_model, config)
        except ConnectorConfigError as exc:
            raise ConnectorConfigError([*exc.problems, *problems]) from None
        if problems:
            raise ConnectorConfigError(problems)
        return settings

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return [dict(config) for _ in range(max_tasks)]

    def create_task(self) -> Task:
        return GeneratorTask()
