"""What a worker runs on its SparkSession before it joins the group.

Starting the session is not enough to start a task at once: a fresh JVM also loads and
compiles the streaming engine, the checkpoint log and the file writer on its first
streaming batch. Measured on the 2-core machine under load, a generator task's first
batch came 4.4 s after `start()` on a session that had only run `range(1).count()`, and
1.3 s after it once one batch of a throw-away streaming query had run; on a worker that
had just restarted, that first batch was most of a hand-back's gap (8-9 s of 14-16 s in
tests/bench/rolling_bounce.py). The throw-away query costs 1-4 s more warm-up, spent before
the worker is given any work.

A first sink task paid more still: its batch goes through `foreachBatch` (Python called
back from the JVM), reads Kafka through Spark's connector and writes a table format, each
loaded and compiled on first use. On a warm worker the first connector's first commit
came 3.8-4.3 s after its `POST /connectors`, a later one's of the same kind 1.8-2.1 s
(tests/bench/first_commit.py). So the warm-up's batch goes through `foreachBatch`, one
batch of the worker's own config topic is read through Spark's Kafka connector, a JSON
sample's type is inferred as a JSON converter without a schema does, and each connector
plugin writes a row of its kind into scratch space (`Connector.warm_up`; which plugins:
`worker.warmup.connectors`), these four side by side.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

FormatWarmUp = Callable[["SparkSession", Path], None]
"""A plugin's `Connector.warm_up`."""


@dataclass(frozen=True)
class OwnTopic:
    """A topic of the worker's own cluster, as Spark's Kafka connector is to read it."""

    topic: str
    options: Mapping[str, str]
    """`kafka.bootstrap.servers` and the worker's consumer security, as `kafka.*`."""


def warm_up(
    session: SparkSession,
    own_topic: OwnTopic | None = None,
    formats: Sequence[FormatWarmUp] = (),
) -> Mapping[str, Any]:
    """One small job, then one batch of Spark's rate source through a `foreachBatch`
    query: written as parquet to a scratch directory when the executors are this process
    (`local` master), to the `noop` sink otherwise (remote executors cannot write where
    the driver's scratch directory is); then `own_topic` read once and each of `formats`.
    Returns the rate batch's progress. The optional parts run at once, each in a thread
    of its own (most of each is the JVM loading and compiling classes, which runs side by
    side), and only ever log a failure: a worker without Spark's Kafka connector, say,
    warms up without it."""
    session.range(1).count()
    with tempfile.TemporaryDirectory(prefix="sparkherd-warm-up-") as scratch:
        local = session.sparkContext.master.startswith("local")
        output = f"{scratch}/output"

        def write(rows: DataFrame, _: int) -> None:
            if local:
                rows.write.mode("append").parquet(output)
            else:
                rows.write.format("noop").mode("overwrite").save()

        query = (
            session.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", 1)
            .load()
            .writeStream.option("checkpointLocation", f"{scratch}/checkpoint")
            .trigger(availableNow=True)
            .foreachBatch(write)
            .start()
        )
        query.awaitTermination()
        progress: Mapping[str, Any] = query.lastProgress or {}
        parts: list[tuple[str, Callable[[], object]]] = [
            ("a JSON type inferred", partial(infer_json, session))
        ]
        if own_topic is not None:
            read = partial(read_once, session, own_topic, scratch)
            parts.append((f"topic {own_topic.topic}", read))
        for index, warm_format in enumerate(formats):
            place = Path(scratch) / f"format-{index}"
            place.mkdir()
            parts.append((warm_format.__qualname__, partial(warm_format, session, place)))
        with ThreadPoolExecutor(len(parts), thread_name_prefix="warm-up") as pool:
            list(pool.map(lambda part: _part(*part), parts))
        return progress


def infer_json(session: SparkSession) -> str:
    """A type inferred from a JSON sample as a task's JSON converter without a schema
    infers it at start (`worker.records.converters.payload_types.inferred_type`): the
    first did it on a cold Python RDD and JSON reader: a first `kafka-to-jdbc` task ran
    1.2 s after its POST, 0.7 s once this had run (tests/bench/first_commit.py)."""
    sample = session.sparkContext.parallelize(['{"value": {"id": 1}}'], 1)
    return str(session.read.json(sample).schema.simpleString())


def read_once(session: SparkSession, own: OwnTopic, scratch: str) -> str:
    """One batch of `own.topic` through Spark's Kafka connector, read and discarded: the
    connector's offset reader, consumer pool and record conversion, loaded. An empty
    topic (a new group's) still has its offsets read. Says how many records it read."""
    query = (
        session.readStream.format("kafka")
        .options(**own.options)
        .option("subscribe", own.topic)
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.option("checkpointLocation", f"{scratch}/kafka-checkpoint")
        .trigger(availableNow=True)
        .foreachBatch(lambda rows, _: rows.write.format("noop").mode("overwrite").save())
        .start()
    )
    query.awaitTermination()
    read = sum(int(batch.get("numInputRows") or 0) for batch in query.recentProgress)
    return f"{read} records through Spark's Kafka connector"


def _part(what: str, part: Callable[[], object]) -> None:
    began = time.monotonic()
    try:
        done = part()
    except Exception as exc:
        first_line = next(iter(str(exc).splitlines()), type(exc).__name__)
        log.info("warm-up: %s skipped: %s", what, first_line)
    else:
        shown = f" ({done})" if isinstance(done, str) else ""
        log.info("warm-up: %s in %.1f s%s", what, time.monotonic() - began, shown)
