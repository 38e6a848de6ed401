"""What a worker runs on its SparkSession before it joins the group.

Starting the session is not enough to start a task at once: a fresh JVM also loads and
compiles the streaming engine, the checkpoint log and the file writer on its first
streaming batch. Measured on the 2-core machine under load, a generator task's first
batch came 4.4 s after `start()` on a session that had only run `range(1).count()`, and
1.3 s after it once one batch of a throw-away streaming query had run; on a worker that
had just restarted, that first batch was most of a hand-back's gap (8-9 s of 14-16 s in
tests/bench/rolling_bounce.py). The throw-away query costs 1-4 s more warm-up, spent before
the worker is given any work.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def warm_up(session: SparkSession) -> Mapping[str, Any]:
    """One small job, then one batch of Spark's rate source through a streaming query:
    written as parquet to a scratch directory when the executors are this process
    (`local` master), to the `noop` sink otherwise (remote executors cannot write where
    the driver's scratch directory is). Returns that batch's progress."""
    session.range(1).count()
    with tempfile.TemporaryDirectory(prefix="sparkherd-warm-up-") as scratch:
        writer = (
            session.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", 1)
            .load()
            .writeStream.option("checkpointLocation", f"{scratch}/checkpoint")
            .trigger(availableNow=True)
        )
        if session.sparkContext.master.startswith("local"):
            writer = writer.format("parquet").option("path", f"{scratch}/output")
        else:
            writer = writer.format("noop")
        query = writer.start()
        query.awaitTermination()
        return query.lastProgress or {}
