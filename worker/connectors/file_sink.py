"""How a connector task writes files: Spark's file sink, one directory per task, each
batch committed from this worker's own Python.

Spark's file sink is what makes a task's output exactly-once: it commits each micro-batch
once in `_spark_metadata` under its directory, and its checkpoint says which batch comes
next, so a batch replayed after a crash, on any worker, replaces nothing and adds nothing.

The query does not hand its batches to that sink itself, though: `foreachBatch` hands
each one to this module, which checks the task's claim and then has Spark's own sink
(`FileStreamSink.addBatch`, the same class, log and layout) commit it. A worker whose
Python process froze while its Spark JVM ran on (a session of its own) once kept
committing batches of tasks the group had long moved on, and the queries of their new
owner failed on the shared checkpoint (`CONCURRENT_STREAM_LOG_UPDATE`) until the zombie
was thawed. Now such a JVM waits on the frozen Python at its next batch, and when it
resumes, the overtaken claim stops the batch before anything is committed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from typing import TYPE_CHECKING, Any, Final

from worker.plugins import TaskContext, task_output_path
from worker.task_claims import Claim

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

BatchStep = Callable[["DataFrame", int, Callable[["DataFrame"], None]], None]
"""What a task may do with each batch before it is committed: given the batch, its id and
the commit, it calls the commit (at most once) with the rows to write. This is where
`errors.tolerance=all` takes failed records out (`worker.record_errors`)."""

FILE_FORMATS: Final = {
    "parquet": "org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat",
    "json": "org.apache.spark.sql.execution.datasources.json.JsonFileFormat",
    "csv": "org.apache.spark.sql.execution.datasources.csv.CSVFileFormat",
}
"""The file formats a task may write, by Spark's own classes for them."""


class ClaimOvertaken(RuntimeError):
    """Another start of the task claimed it after this one: this one must not commit."""


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
    commit = FileCommitter(file_stream_sink(rows, path, output_format), context.claim, step)
    return (
        rows.writeStream.foreachBatch(commit)
        .option("checkpointLocation", str(context.checkpoint_dir))
        .queryName(context.query_name)
        .trigger(processingTime=f"{interval_ms} milliseconds")
        .start()
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


class FileCommitter:
    """One query's batches into Spark's file sink, each after a look at the claim (and,
    with a step, again right before the commit: the step may have taken a while)."""

    def __init__(self, sink: Any, claim: Claim | None, step: BatchStep | None = None) -> None:
        self._sink = sink
        self._claim = claim
        self._step = step

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self._check_claim(batch_id)
        if self._step is None:
            self._sink.addBatch(batch_id, batch._jdf)
            return

        def commit(rows: DataFrame) -> None:
            self._check_claim(batch_id)
            self._sink.addBatch(batch_id, rows._jdf)

        self._step(batch, batch_id, commit)

    def _check_claim(self, batch_id: int) -> None:
        holder = self._claim.fenced_by() if self._claim is not None else None
        if holder is not None:
            raise ClaimOvertaken(
                f"batch {batch_id} not committed: the task is now claimed by {holder}"
            )
