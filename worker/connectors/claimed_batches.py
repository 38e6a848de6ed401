"""How a sink task commits: each micro-batch from this worker's own Python, after a look
at the task's claim.

A sink's exactly-once machinery (Spark's file sink log, Delta's transaction ids, Iceberg's
snapshot summaries) keys each commit by the checkpoint's batch id, so a batch replayed
after a crash, on any worker, adds nothing. What it cannot stop is a zombie: a worker
whose Python process froze while its Spark JVM ran on (a session of its own) once kept
committing batches of tasks the group had long moved on, and the queries of their new
owner failed on the shared checkpoint (`CONCURRENT_STREAM_LOG_UPDATE`) until the zombie
was thawed. So the query hands each batch to `foreachBatch` here, which checks the claim
and then has the sink commit it: such a JVM now waits on the frozen Python at its next
batch, and when it resumes, the overtaken claim stops the batch before anything is
committed.

A stop interrupts the batch in flight, and Spark must see that the error the batch then
raises is its own stop (`BatchInterrupted`), not a failure of the task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from py4j.protocol import Py4JJavaError

from worker.plugins.api import TaskContext
from worker.plugins.task_claims import Claim

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

BatchStep = Callable[["DataFrame", int, Callable[["DataFrame"], None]], None]
"""What a task may do with each batch before it is committed: given the batch, its id and
the commit, it calls the commit (at most once) with the rows to write. This is where
`errors.tolerance=all` takes failed records out (`worker.records.errors`)."""

BatchWrite = Callable[["DataFrame", int], None]
"""The sink's commit of one batch's rows under the batch's id, once per id."""


class ClaimOvertaken(RuntimeError):
    """Another start of the task claimed it after this one: this one must not commit."""


INTERRUPTIONS = (
    "java.lang.InterruptedException",
    "java.io.InterruptedIOException",
    "java.nio.channels.ClosedByInterruptException",
)
"""The JVM exceptions by which Spark knows a batch was interrupted by the query's stop."""


class BatchInterrupted(RuntimeError):
    """A batch's Spark call that the query's stop interrupted, in few words.

    Spark tells a stop from a failure by matching the Python error's text (the traceback
    Py4J hands back) against `Py4JJavaError: An error occurred while calling ...` followed
    by one of `INTERRUPTIONS`, with a regular expression that recurses once per character.
    The text of the original error holds the whole Java stack, thousands of characters, and
    the match overflowed the stream thread's stack (`StackOverflowError`): the stop was
    logged as the thread's crash, a thousand lines of plain text in the worker's log. This
    error's text is that of the original's first line and the interruption alone.
    """

    @classmethod
    def of(cls, error: Py4JJavaError) -> BatchInterrupted | None:
        text = str(error)
        named = next((name for name in INTERRUPTIONS if name in text), None)
        if named is None:
            return None
        return cls(f"py4j.protocol.Py4JJavaError: {error.errmsg}\n: {named}")


class ClaimedBatches:
    """One query's batches into a sink, each after a look at the claim (and, with a step,
    again right before the commit: the step may have taken a while)."""

    def __init__(self, write: BatchWrite, claim: Claim | None, step: BatchStep | None) -> None:
        self._write = write
        self._claim = claim
        self._step = step

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        try:
            self._commit(batch, batch_id)
        except Py4JJavaError as error:
            interrupted = BatchInterrupted.of(error)
            if interrupted is None:
                raise
            raise interrupted from None

    def _commit(self, batch: DataFrame, batch_id: int) -> None:
        self._check_claim(batch_id)
        if self._step is None:
            self._write(batch, batch_id)
            return

        def commit(rows: DataFrame) -> None:
            self._check_claim(batch_id)
            self._write(rows, batch_id)

        self._step(batch, batch_id, commit)

    def _check_claim(self, batch_id: int) -> None:
        holder = self._claim.fenced_by() if self._claim is not None else None
        if holder is not None:
            raise ClaimOvertaken(
                f"batch {batch_id} not committed: the task is now claimed by {holder}"
            )


def start_claimed_query(
    rows: DataFrame,
    context: TaskContext,
    interval_ms: int,
    write: BatchWrite,
    step: BatchStep | None = None,
) -> StreamingQuery:
    """Start the task's query: `rows` (or what `step` makes of each batch) through `write`
    every `interval_ms`, checkpointed in the task's checkpoint directory."""
    return (
        rows.writeStream.foreachBatch(ClaimedBatches(write, context.claim, step))
        .option("checkpointLocation", str(context.checkpoint_dir))
        .queryName(context.query_name)
        .trigger(processingTime=f"{interval_ms} milliseconds")
        .start()
    )
