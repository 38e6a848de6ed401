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
from collections.abc import Iterator, Mapping

from pyspark.sql import SparkSession

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
