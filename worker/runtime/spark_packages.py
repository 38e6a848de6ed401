"""The JVM packages Spark's tasks need that pip does not install: Spark's own Kafka
connector (`spark-sql-kafka-0-10`) and Avro support (`spark-avro`), for the installed
PySpark; Delta Lake's jars, for the installed `delta-spark`; Apache Iceberg's Spark
runtime and PostgreSQL's JDBC driver, at versions pinned here.

Spark's own `spark.jars.packages` needs Ivy settings that point at a reachable
repository; Maven already has them. So the worker asks Maven (`maven_jars`) for each
package of its Spark version once, caches it, and adds the jars Spark does not already
ship to `spark.jars` before its session starts. Each package is resolved on its own: a
machine without Maven or Maven Central still works, its tasks then read Kafka through
the Python source (`kafka.client=auto`) and refuse the avro converter with a message
naming the package. Which packages there are, and the key that turns each off, is
`jvm_packages`' one list.

One of Spark's packages is looked for at the exact Spark version first, then at the
first release of the same minor line (`4.0.1` -> `4.0.0`): the API is stable within a
minor line, and not every patch release is on every mirror. Delta's jars must be those of
the Python package (`delta-spark`), whose release line follows Spark's.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyspark

from worker.plugins.jvm_packages import SparkPackage
from worker.runtime.maven_jars import (
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


def package_bundles(package: SparkPackage, spark_version: str) -> list[JarBundle]:
    """The candidate bundles, best first."""
    major, minor, *_ = spark_version.split(".")
    versions = package.versions or tuple(dict.fromkeys([spark_version, f"{major}.{minor}.0"]))
    return [
        JarBundle(
            f"{package.name}-{version}",
            (f"{package.group}:{package.artifact}:{version}",),
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


def spark_package_jars(packages: Sequence[SparkPackage], environ: Mapping[str, str]) -> list[Path]:
    """The packages' jars to add to `spark.jars`, resolving them on first use. A package
    that cannot be had is logged and left out; `JarResolutionError` when none can."""
    jars: list[Path] = []
    problems: list[str] = []
    for package in packages:
        try:
            jars += _package_jars(package, environ)
        except JarResolutionError as exc:
            problems.append(str(exc))
    if problems and not jars:
        raise JarResolutionError("; ".join(problems))
    for problem in problems:
        log.warning("Spark starts without a package it was to have: %s", problem)
    return list(dict.fromkeys(jars))


def _package_jars(package: SparkPackage, environ: Mapping[str, str]) -> list[Path]:
    cache = cache_root(environ)
    bundles = package_bundles(package, pyspark.__version__)
    if not bundles:
        raise JarResolutionError(f"{package.name}: its Python package is not installed")
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
