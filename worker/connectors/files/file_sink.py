"""How a connector task writes files: Spark's file sink, one directory per task.

Spark's file sink is what makes a task's output exactly-once: it commits each micro-batch
once in `_spark_metadata` under its directory, and its checkpoint says which batch comes
next, so a batch replayed after a crash, on any worker, replaces nothing and adds nothing.
The query hands its batches to that sink (`FileStreamSink.addBatch`, the same class, log
and layout) through `worker.connectors.claimed_batches`, which checks the task's claim
first.
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any, Final

from worker.connectors.claimed_batches import BatchStep, start_claimed_query
from worker.plugins.api import TaskContext, task_output_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

FILE_FORMATS: Final = {
    "parquet": "org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat",
    "json": "org.apache.spark.sql.execution.datasources.json.JsonFileFormat",
    "csv": "org.apache.spark.sql.execution.datasources.csv.CSVFileFormat",
}
"""The file formats a task may write, by Spark's own classes for them."""


def start_file_sink(
    rows: DataFrame,
    context: TaskContext,
    output_path: str,
    output_format: str,
    interval_ms: int,
    step: BatchStep | None = None,
) -> StreamingQuery:
    """Write `rows` (or what `step` makes of each batch) to `<output_path>/task-<i>`
    every `interval_ms` (csv with a header).

    The sink is made here, as `writeStream` would make it: a directory that cannot hold
    its log fails the start, not the first batch."""
    path = task_output_path(output_path, context.task)
    sink = file_stream_sink(rows, path, output_format)
    return start_claimed_query(
        rows,
        context,
        interval_ms,
        lambda batch, batch_id: sink.addBatch(batch_id, batch._jdf),
        step,
    )


def file_stream_sink(rows: DataFrame, path: str, output_format: str) -> Any:
    """Spark's own file sink (`FileStreamSink`) for `path`, in the session of `rows`."""
    jvm: Any = rows.sparkSession._jvm
    python_utils = jvm.org.apache.spark.api.python.PythonUtils
    options = jvm.java.util.HashMap()
    options.put("path", path)
    options.put("header", "true")
    file_format = reduce(getattr, FILE_FORMATS[output_format].split("."), jvm)
    return jvm.org.apache.spark.sql.execution.streaming.FileStreamSink(
        rows.sparkSession._jsparkSession,
        path,
        file_format(),
        python_utils.toSeq(jvm.java.util.ArrayList()),
        python_utils.toScalaMap(options),
    )
