"""A SparkSession in the test process itself, for modules that test Spark code without a
worker.

A process keeps the JVM of the first SparkContext it started, and that JVM's jars: a
later context's `spark.jars` is ignored. Under `pytest -n 2` two such modules may share a
process in either order, so every in-process session asks for the same packages (the
union of what those modules need), whichever comes first, and the JVM options of a
short-lived test JVM (`tests.support.jvm_options`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as f

from tests.support.jvm_options import spark_driver_options
from worker.plugins.jvm_packages import SPARK_AVRO
from worker.runtime.spark_packages import spark_package_jars
from worker.runtime.spark_session import SparkSessionProvider, with_driver_java_options


@contextlib.contextmanager
def in_process_spark(app_name: str, conf: Mapping[str, str]) -> Iterator[SparkSession]:
    provider = SparkSessionProvider(
        with_driver_java_options(conf, spark_driver_options()),
        app_name,
        lambda: spark_package_jars([SPARK_AVRO], os.environ),
    )
    try:
        yield provider.get()
    finally:
        provider.stop()


def binary_rows(spark: SparkSession, data: Sequence[bytes | None]) -> DataFrame:
    """A `raw BINARY` column holding `data` in order, built in the JVM from literals: a
    frame made from a Python list has a Python worker re-pickle the list at every query it
    feeds, half of a small query's time."""
    rows = [f.struct(f.lit(value).cast("binary").alias("raw")) for value in data]
    return spark.range(1).select(f.inline(f.array(*rows)))
