"""A batch interrupted by its query's stop is told to Spark as a stop, in few words.

Spark's own check (`StreamExecution.isInterruptionException`, called here through the
JVM) reads the text of the error a `foreachBatch` function raised, as Py4J hands it back:
the traceback of the Python error. For a Spark call that the stop interrupted deep in a
batch, that text held the whole Java stack and the batch's Python frames, and the check's
regular expression overflowed the stream thread's stack.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from tests.support.in_process_spark import in_process_spark
from worker.connectors.claimed_batches import BatchInterrupted, ClaimedBatches

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with in_process_spark("batch-interruption", {"spark.master": "local[1]"}) as session:
        yield session


def interrupted_call(spark: SparkSession) -> None:
    """A Spark job whose thread the JVM interrupts, as a stop interrupts a batch's: its
    error's text holds the whole stack of Spark's job, some 5,000 characters."""
    jvm: Any = spark.sparkContext._jvm
    jvm.java.lang.Thread.currentThread().interrupt()
    spark.range(10).collect()


def raised_text(spark: SparkSession) -> str:
    """What Py4J hands the JVM when the batch function raises: its traceback. That of the
    interrupted call itself made Spark's check overflow its thread's stack."""
    batch = spark.range(1)

    def write(rows: DataFrame, batch_id: int) -> None:
        interrupted_call(spark)

    with pytest.raises(Exception) as raised:
        ClaimedBatches(write, None, None)(batch, 7)
    return "".join(traceback.format_exception(raised.value))


def spark_sees_a_stop(spark: SparkSession, text: str) -> bool:
    jvm: Any = spark.sparkContext._jvm
    error = jvm.py4j.Py4JException(text)
    check = jvm.org.apache.spark.sql.execution.streaming.StreamExecution
    return bool(check.isInterruptionException(error, spark.sparkContext._jsc.sc()))


def test_spark_sees_an_interrupted_batch_as_its_stop_without_reading_its_stack(
    spark: SparkSession,
) -> None:
    text = raised_text(spark)
    assert f"{BatchInterrupted.__name__}: py4j.protocol.Py4JJavaError" in text
    assert "java.lang.InterruptedException" in text
    assert len(text) < 2_000, text
    assert spark_sees_a_stop(spark, text)


def test_a_failure_that_is_no_interruption_keeps_its_whole_trace(spark: SparkSession) -> None:
    def write(rows: DataFrame, batch_id: int) -> None:
        rows.sparkSession.sql("SELECT raise_error('the sink broke')").collect()

    with pytest.raises(Exception, match="the sink broke") as raised:
        ClaimedBatches(write, None, None)(spark.range(1), 7)
    assert not isinstance(raised.value, BatchInterrupted)
    assert not spark_sees_a_stop(spark, "".join(traceback.format_exception(raised.value)))
