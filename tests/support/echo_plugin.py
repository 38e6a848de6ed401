"""Third-party-style connector plugins that live in the test suite: a worker finds them
only through the `sparkherd.connectors` entry points that `tests/data/plugin_path`
declares, never because sparkherd imports them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pyspark.sql import functions as F

from worker.plugins.api import Connector, Task, TaskContext, parse_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery


class EchoSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    message: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="What every row says"
    )
    output_path: Annotated[str, StringConstraints(min_length=1)] = Field(alias="output.path")


class EchoTask(Task):
    """Writes (task, seq, message) as JSON lines to `<output.path>/task-<i>`."""

    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        settings = parse_config(EchoSettings, context.task_config)
        return (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", 3)
            .load()
            .select(
                F.lit(context.task).alias("task"),
                F.col("value").alias("seq"),
                F.lit(settings.message).alias("message"),
            )
            .writeStream.format("json")
            .option("path", f"{settings.output_path}/task-{context.task}")
            .option("checkpointLocation", str(context.checkpoint_dir))
            .queryName(context.query_name)
            .trigger(processingTime="1 second")
            .start()
        )


class EchoConnector(Connector):
    name = "test-echo"
    config_model = EchoSettings
    connector_type = "source"

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return [dict(config) for _ in range(max_tasks)]

    def create_task(self) -> Task:
        return EchoTask()


class ShardedEchoSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    shards_dir: Annotated[str, StringConstraints(min_length=1)] = Field(alias="shards.dir")
    output_path: Annotated[str, StringConstraints(min_length=1)] = Field(alias="output.path")


class ShardedEchoConnector(Connector):
    """One task per entry of `shards.dir`, echoing the entry's name: a connector whose
    split follows the outside world, as one reading a topic's partitions does."""

    name = "test-sharded-echo"
    config_model = ShardedEchoSettings
    connector_type = "source"
    task_configs_refresh_ms = 1000

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        shards = sorted(
            p.name for p in Path(parse_config(ShardedEchoSettings, config).shards_dir).iterdir()
        )
        return [{**config, "message": shard} for shard in shards[:max_tasks]]

    def create_task(self) -> Task:
        return EchoTask()
