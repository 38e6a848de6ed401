"""How a connector task writes files: Spark's file sink, one directory per task.

The file sink is what makes a task's output exactly-once: it commits each micro-batch
once in `_spark_metadata` under its directory, and its checkpoint says which batch comes
next, so a batch replayed after a crash, on any worker, replaces nothing and adds nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from worker.plugins import TaskContext, task_output_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery


def start_file_sink(
    rows: DataFrame, context: TaskContext, output_path: str, output_format: str, interval_ms: int
) -> StreamingQuery:
    """Write `rows` to `<output_path>/task-<i>` every `interval_ms` (csv with a header)."""
    return (
        rows.writeStream.format(output_format)
        .option("path", task_output_path(output_path, context.task))
        .option("checkpointLocation", str(context.checkpoint_dir))
        .option("header", "true")
        .queryName(context.query_name)
        .trigger(processingTime=f"{interval_ms} milliseconds")
        .start()
    )
