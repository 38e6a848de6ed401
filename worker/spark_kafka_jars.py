"""Spark's JVM Kafka connector (`spark-sql-kafka-0-10`) for the installed PySpark.

pip installs Spark without it, and Spark's own `spark.jars.packages` needs Ivy settings
that point at a reachable repository; Maven already has them. So the worker asks Maven
(`maven_jars`) for the connector of its Spark version once, caches it, and adds the
jars Spark does not already ship to `spark.jars` before its session starts. A machine
without Maven or Maven Central still works: tasks with `kafka.client=auto` then read
through the Python source.

The connector is looked for at the exact Spark version first, then at the first release
of the same minor line (`4.0.1` -> `4.0.0`): the connector's API is stable within a
minor line, and not every patch release is on every mirror.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

import pyspark

from worker.maven_jars import (
    JarBundle,
    JarResolutionError,
    cache_root,
    cached_jars,
    resolve_jars,
)

log = logging.getLogger(__name__)

_JAR_NAME = re.compile(r"(?P<artifact>.+?)-\d+(?:\.\d+)+(?:[-.]\w+)*\.jar")
"""`<artifact>-<version>.jar`; the artifact may hold `-<digits>` (`kafka-0-10_2.13`),
a version has a dot and may have a qualifier (`1.5.6-10`)."""


def connector_bundles(spark_version: str) -> list[JarBundle]:
    """The candidate bundles, best first."""
    major, minor, *_ = spark_version.split(".")
    versions = dict.fromkeys([spark_version, f"{major}.{minor}.0"])
    return [
        JarBundle(
            f"spark-sql-kafka-{version}",
            (f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}",),
            # Spark ships Hadoop's client; its 60 MB would be left out of spark.jars anyway.
            exclusions=("org.apache.hadoop:*",),
        )
        for version in versions
    ]


def missing_from(jars: list[Path], shipped: Path) -> list[Path]:
    """The jars whose artifact Spark does not ship already, at any version: a second
    copy of Hadoop or Scala on the classpath would shadow Spark's own."""
    present = {_artifact(jar.name) for jar in shipped.glob("*.jar")}
    return [jar for jar in jars if _artifact(jar.name) not in present]


def spark_kafka_jars(environ: Mapping[str, str]) -> list[Path]:
    """The connector's jars to add to `spark.jars`, resolving them on first use; raises
    `JarResolutionError` when no candidate can be had."""
    cache = cache_root(environ)
    bundles = connector_bundles(pyspark.__version__)
    shipped = Path(pyspark.__file__).parent / "jars"
    for bundle in bundles:
        if (jars := cached_jars(bundle, cache)) is not None:
            return missing_from(jars, shipped)
    problems = []
    for bundle in bundles:
        try:
            return missing_from(resolve_jars(bundle, cache), shipped)
        except JarResolutionError as exc:
            problems.append(str(exc))
    raise JarResolutionError("; ".join(problems))


def _artifact(file_name: str) -> str:
    match = _JAR_NAME.fullmatch(file_name)
    return match["artifact"] if match else file_name
