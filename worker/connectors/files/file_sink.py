"""How a connector task writes files: Spark's file sink, one directory per task.

Spark's file sink is what makes a task's output exactly-once: it commits each micro-batch
once in `_spark_metadata` under its directory, and its checkpoint says which batch comes
next, so a batch replayed after a crash, on any worker, replaces nothing and adds nothing.
The query hands its batches to that sink (`FileStreamSink.addBatch`, the same class, log
and layout) through `worker.connectors.claimed_batches`, which checks the task's claim
first.

The sink's batch ids are the checkpoint's, counted on from the last batch the directory's
log held when the checkpoint was made (`first_sink_batch`): a fresh checkpoint writing
into a directory that an earlier one filled (partitions taken over after `tasks.max`
changed, offsets reset) must not have its batches skipped as already committed, nor
start a log with a gap, which Spark's compaction fails on (`BATCH_METADATA_NOT_FOUND`).
For the same reason a batch the checkpoint committed without the sink (one that
`PATCH .../offsets` wrote: positions, no rows) gets an empty entry in the sink's log
before the query starts (`log_committed_batches`); only such batches do, so a checkpoint
resumed into another directory still fails at the log's compaction, which is not
restarted and says what to do.
"""

from __future__ import annotations

import json
import os
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from worker.connectors.claimed_batches import BatchStep, start_claimed_query
from worker.plugins.api import TaskContext, task_output_path
from worker.runtime.checkpoint_offsets import altered_batches, newest_planned_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

FILE_FORMATS: Final = {
    "parquet": "org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat",
    "json": "org.apache.spark.sql.execution.datasources.json.JsonFileFormat",
    "csv": "org.apache.spark.sql.execution.datasources.csv.CSVFileFormat",
}
"""The file formats a task may write, by Spark's own classes for them."""
FIRST_BATCH_FILE: Final = "sparkherd-file-sink-first-batch.json"
"""In the task's checkpoint: the sink's batch id of the checkpoint's batch 0."""
SINK_LOG_DIR: Final = "_spark_metadata"


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
    newest = newest_sink_batch(rows.sparkSession, path)
    first = first_sink_batch(context.checkpoint_dir, newest)
    altered = (first + batch for batch in altered_batches(context.checkpoint_dir))
    log_committed_batches(rows.sparkSession, path, sorted(b for b in altered if b > newest))
    return start_claimed_query(
        rows,
        context,
        interval_ms,
        lambda batch, batch_id: sink.addBatch(first + batch_id, batch._jdf),
        step,
    )


def first_sink_batch(checkpoint: Path, newest_in_log: int) -> int:
    """The sink's batch id of the checkpoint's batch 0: the one after the log's newest
    (`newest_in_log`, -1 for none) for a checkpoint without batches, recorded there so
    every later start counts the same; 0 for a checkpoint made before the record was."""
    recorded = recorded_first_batch(checkpoint)
    if recorded is not None:
        return recorded
    if newest_planned_batch(checkpoint) >= 0:
        return 0
    checkpoint.mkdir(parents=True, exist_ok=True)
    temporary = checkpoint / f".{FIRST_BATCH_FILE}.tmp"
    temporary.write_text(json.dumps({"first": newest_in_log + 1}), encoding="utf-8")
    os.replace(temporary, checkpoint / FIRST_BATCH_FILE)
    return newest_in_log + 1


def log_committed_batches(spark: SparkSession, directory: str, batches: list[int]) -> None:
    """An empty entry in the sink's log in `directory` for each of `batches` (the sink's
    ids of batches the offsets writer committed that the log lacks), written by Spark's
    own log class, compactions included, so the sink's next batch finds no gap."""
    if not batches:
        return
    jvm: Any = spark._jvm
    streaming = jvm.org.apache.spark.sql.execution.streaming
    log = streaming.FileStreamSinkLog(
        streaming.FileStreamSinkLog.VERSION(),
        spark._jsparkSession,
        f"{directory.rstrip('/')}/{SINK_LOG_DIR}",
        jvm.scala.Option.empty(),
    )
    nothing = spark.sparkContext._gateway.new_array(streaming.SinkFileStatus, 0)
    for batch in batches:
        log.add(batch, nothing)


def recorded_first_batch(checkpoint: Path) -> int | None:
    path = checkpoint / FIRST_BATCH_FILE
    if not path.is_file():
        return None
    return int(json.loads(path.read_text(encoding="utf-8"))["first"])


def newest_sink_batch(spark: SparkSession, directory: str) -> int:
    """The newest batch id in the sink's log in `directory` (-1: none), through Hadoop's
    file system, as Spark reads it (the output may be a URI: s3a://, hdfs://)."""
    jvm: Any = spark._jvm
    log = jvm.org.apache.hadoop.fs.Path(f"{directory.rstrip('/')}/{SINK_LOG_DIR}")
    fs = log.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(log):
        return -1
    names = [status.getPath().getName() for status in fs.listStatus(log)]
    ids = [int(n.removesuffix(".compact")) for n in names if n.removesuffix(".compact").isdigit()]
    return max(ids, default=-1)


def sink_has_batch(
    spark: SparkSession, output_path: str, checkpoint: Path, task: int, batch: int
) -> bool:
    """Whether task `task`'s sink committed batch `batch` of `checkpoint` (a batch
    Spark planned but did not log as committed): `worker.connectors.partition_takeover`
    asks before it moves the task's partitions."""
    first = recorded_first_batch(checkpoint) or 0
    return first + batch <= newest_sink_batch(spark, task_output_path(output_path, task))


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
