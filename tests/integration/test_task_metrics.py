"""A task's metrics against its real output: bursts of input with idle triggers between
them, on a real local Spark (issue 29, item 3: the total had stayed at a third of the
rows written, and the batch id one ahead of the commit log); its error totals (issue
30, item 3) against the bad records written, across a restart of the task; and a task
whose batches fall behind its trigger, reported as such while an idle one is not (issue
34, item 2)."""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest
from pydantic import BaseModel, Field

from protocol.messages import ConnectorTaskId
from tests.support.file_sink import committed_files
from tests.support.jvm_options import spark_driver_options
from tests.support.plugins import plugins_for
from tests.support.polling import wait_until_async
from worker.admission.registry import PluginRegistry
from worker.plugins.api import Connector, Task, TaskContext, parse_config
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.task_state import TaskState
from worker.records.errors.task_errors import BatchErrors, read_batch_errors, write_batch_errors
from worker.runtime.spark_session import SparkSessionProvider
from worker.runtime.spark_task_runtime import SparkTaskRuntime
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import overload_line, tasks_behind

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

pytestmark = pytest.mark.integration

WAIT_S = 60.0
BURSTS = (600, 550, 650)
IDLE_REPORT_MS = 200
"""Spark reports an idle trigger at most this often (its default is 10 s): each idle
period below then holds several idle reports, as a real one of a minute would."""
IDLE_S = 2.0
TASK = ConnectorTaskId("bursts", 0)
ERRORS_TASK = ConnectorTaskId("errors", 0)
SLOW_TASK = ConnectorTaskId("slow", 0)
SLOW_BATCH_S = 3.0


class BurstsSettings(BaseModel):
    input_path: str = Field(alias="input.path")
    output_path: str = Field(alias="output.path")


class BurstsTask(Task):
    """Lines of the text files dropped into a directory, as parquet: input that comes in
    bursts, whenever the test writes a file."""

    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        settings = parse_config(BurstsSettings, context.task_config)
        lines = spark.readStream.format("text").load(settings.input_path)
        return (
            self.sink(lines.writeStream, settings, context)
            .option("checkpointLocation", str(context.checkpoint_dir))
            .queryName(context.query_name)
            .trigger(processingTime="100 milliseconds")
            .start()
        )

    def sink(
        self, writer: DataStreamWriter, settings: BurstsSettings, context: TaskContext
    ) -> DataStreamWriter:
        return writer.format("parquet").option("path", settings.output_path)


class BurstsConnector(Connector):
    name = "bursts"
    connector_type = "source"
    config_model = BurstsSettings

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return [dict(config)]

    def create_task(self) -> Task:
        return BurstsTask()


class ErrorsTask(BurstsTask):
    """Counts the lines starting with `bad` of each batch as records sent to the dead
    letter queue, in the batch's error counts file, as the error layer does."""

    def sink(
        self, writer: DataStreamWriter, settings: BurstsSettings, context: TaskContext
    ) -> DataStreamWriter:
        checkpoint = context.checkpoint_dir

        def count(batch: DataFrame, batch_id: int) -> None:
            bad = batch.filter(batch.value.startswith("bad")).count()
            if bad:
                errors = BatchErrors(
                    record_errors=bad,
                    records_skipped=bad,
                    deadletterqueue_produce_requests=bad,
                    last_error_timestamp_ms=1_000 + batch_id,
                )
                write_batch_errors(checkpoint, batch_id, errors)

        return writer.foreachBatch(count)


class ErrorsConnector(BurstsConnector):
    name = "errors"

    def create_task(self) -> Task:
        return ErrorsTask()


class SlowTask(Task):
    """A batch every 100 ms asked for, each taking `SLOW_BATCH_S`: always behind."""

    def start(self, spark: SparkSession, context: TaskContext) -> StreamingQuery:
        return (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", 1)
            .load()
            .writeStream.foreachBatch(lambda _batch, _id: time.sleep(SLOW_BATCH_S))
            .option("checkpointLocation", str(context.checkpoint_dir))
            .queryName(context.query_name)
            .trigger(processingTime="100 milliseconds")
            .start()
        )


class SlowConnector(BurstsConnector):
    name = "slow"

    def create_task(self) -> Task:
        return SlowTask()


@pytest.fixture(scope="module")
def spark_provider() -> Iterator[SparkSessionProvider]:
    provider = SparkSessionProvider(
        {
            "spark.master": "local[2]",
            "spark.driver.extraJavaOptions": spark_driver_options(),
            "spark.sql.streaming.noDataProgressEventInterval": str(IDLE_REPORT_MS),
        },
        "sparkherd-task-metrics-test",
    )
    try:
        provider.get()
        yield provider
    finally:
        provider.stop()


@pytest.fixture
async def runtime(
    spark_provider: SparkSessionProvider, tmp_path: Path
) -> AsyncIterator[SparkTaskRuntime]:
    checkpoints = tmp_path / "checkpoints"
    task_runtime = SparkTaskRuntime(
        spark_provider,
        plugins_for(
            PluginRegistry([BurstsConnector, ErrorsConnector, SlowConnector]),
            checkpoints,
            spark_provider.get,
        ),
        checkpoints,
        "127.0.0.1:8083",
        10_000,
        lambda *_: None,
        monitor_interval_s=0.5,
    )
    try:
        yield task_runtime
    finally:
        await task_runtime.stop_all()


def write_burst(input_dir: Path, number: int, rows: int) -> None:
    """One file of `rows` lines, renamed into place so no trigger sees it half written."""
    staged = input_dir.parent / f"burst-{number}.txt"
    staged.write_text("".join(f"{number}-{row}\n" for row in range(rows)))
    staged.rename(input_dir / staged.name)


def output_rows(output: Path) -> int:
    """Rows of the files the sink committed, read without Spark (which a look every half
    second would keep busy)."""
    return sum(pq.read_metadata(path).num_rows for path in committed_files(output))


def commit_log(checkpoint: Path) -> list[int]:
    log = checkpoint / "commits"
    return sorted(int(entry.name) for entry in log.iterdir() if entry.name.isdigit())


async def test_metrics_of_bursty_input_match_the_output_and_the_commit_log(
    runtime: SparkTaskRuntime, tmp_path: Path
) -> None:
    input_dir, output = tmp_path / "in", tmp_path / "out"
    input_dir.mkdir()
    config = {
        "connector.class": "bursts",
        "tasks.max": "1",
        "input.path": str(input_dir),
        "output.path": str(output),
    }
    await runtime.start_task(TASK, config, config, 1)
    status = runtime.task_status(TASK)
    assert status is not None and status.state is TaskState.RUNNING
    await asyncio.sleep(IDLE_S)
    written = 0
    for number, rows in enumerate(BURSTS):
        write_burst(input_dir, number, rows)
        written += rows
        await wait_until_async(
            partial(output_rows, output),
            WAIT_S,
            what=f"burst {number} in the output",
            until=partial(operator.eq, written),
        )
        await asyncio.sleep(IDLE_S)

    checkpoint = checkpoint_dir_for(tmp_path / "checkpoints", TASK.connector, TASK.task)

    def figures() -> tuple[int, int] | None:
        progress: TaskProgress | None = runtime.progress().get(TASK)
        return None if progress is None else (progress.input_rows_total, progress.batch_id)

    expected = (written, commit_log(checkpoint)[-1])
    seen = await wait_until_async(
        figures, WAIT_S, what="the metrics to match the output", until=lambda f: f == expected
    )
    assert seen == (output_rows(output), commit_log(checkpoint)[-1])


def write_lines(input_dir: Path, name: str, good: int, bad: int) -> None:
    """One file of `good` lines and `bad` lines starting with `bad`, renamed into place."""
    staged = input_dir.parent / f"{name}.txt"
    staged.write_text("".join(f"ok-{row}\n" for row in range(good)) + "bad\n" * bad)
    staged.rename(input_dir / staged.name)


async def test_error_totals_count_committed_batches_once_and_survive_a_restart(
    runtime: SparkTaskRuntime, tmp_path: Path
) -> None:
    input_dir = tmp_path / "in"
    input_dir.mkdir()
    config = {
        "connector.class": "errors",
        "tasks.max": "1",
        "input.path": str(input_dir),
        "output.path": str(tmp_path / "unused"),
    }
    checkpoint = checkpoint_dir_for(tmp_path / "checkpoints", ERRORS_TASK.connector, 0)

    def errors() -> BatchErrors | None:
        return runtime.errors().get(ERRORS_TASK)

    def committed_files() -> BatchErrors:
        return sum(
            (read_batch_errors(checkpoint, batch) for batch in commit_log(checkpoint)),
            BatchErrors(),
        )

    await runtime.start_task(ERRORS_TASK, config, config, 1)
    for number, bad in enumerate((3, 0, 4)):
        write_lines(input_dir, f"part-{number}", 50, bad)
    seen = await wait_until_async(
        errors, WAIT_S, what="7 errors", until=lambda seen: seen.record_errors == 7
    )
    assert seen == committed_files()
    assert (seen.records_skipped, seen.deadletterqueue_produce_requests) == (7, 7)

    # Stopped, as by a crash after the next batch wrote its file but before it committed:
    # the run that commits the batch writes its file again, and it counts as that run's.
    await runtime.stop_task(ERRORS_TASK)
    write_batch_errors(checkpoint, commit_log(checkpoint)[-1] + 1, BatchErrors(record_errors=99))
    await runtime.start_task(ERRORS_TASK, config, config, 2)
    restarted = await wait_until_async(errors, WAIT_S, what="the totals back", until=bool)
    assert restarted == seen, "a restarted task starts from its checkpoint's totals"
    write_lines(input_dir, "part-3", 50, 2)
    final = await wait_until_async(
        errors, WAIT_S, what="9 errors", until=lambda seen: seen.record_errors >= 9
    )
    assert final == committed_files()
    assert (final.record_errors, final.deadletterqueue_produce_requests) == (9, 9)


async def test_a_task_behind_its_trigger_is_reported_and_an_idle_one_is_not(
    runtime: SparkTaskRuntime, tmp_path: Path
) -> None:
    """The slow task commits a batch every 3 s of the ten a second its trigger asks for;
    the idle one has no input at all. `/metrics` and `/health` read what is checked here
    (`rest.metrics`, `rest.app`; their unit tests check how they show it)."""
    input_dir = tmp_path / "in"
    input_dir.mkdir()
    idle = {
        "connector.class": "bursts",
        "tasks.max": "1",
        "input.path": str(input_dir),
        "output.path": str(tmp_path / "out"),
    }
    slow = {**idle, "connector.class": "slow"}
    await runtime.start_task(TASK, idle, idle, 1)
    await runtime.start_task(SLOW_TASK, slow, slow, 1)
    await wait_until_async(
        lambda: runtime.progress().get(TASK), WAIT_S, what="the idle task's first trigger"
    )
    lag = await wait_until_async(
        lambda: runtime.trigger_lags().get(SLOW_TASK),
        WAIT_S,
        what="the slow task behind its trigger",
        until=lambda lag: lag.behind,
    )
    assert lag.interval_s == 0.1
    lags = runtime.trigger_lags()
    assert lags[TASK].lag_s == 0.0, "a task waiting for data is not behind"
    assert list(tasks_behind(lags)) == [SLOW_TASK]
    line = overload_line(lags)
    assert line is not None and "1 of 2 running tasks" in line and "slow-0" in line

    await runtime.stop_task(SLOW_TASK)
    assert SLOW_TASK not in runtime.trigger_lags()
    assert overload_line(runtime.trigger_lags()) is None
