"""The one list of JVM packages a worker may add to Spark, each with the worker key that
turns it off.

Three places read it and once had lists of their own that had to stay in step: the worker
config (which keys exist and what they accept), the service (which packages to fetch when
Spark starts) and `spark_packages` (where each package comes from). A sink that needs a
jar adds one row here. The module imports no Spark, so the config can read it cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Final, Literal

JvmChoice = Literal["maven", "none"]
JVM_CHOICES: Final[tuple[JvmChoice, ...]] = ("maven", "none")


@dataclass(frozen=True)
class SparkPackage:
    """A Maven artifact for Spark's classpath; `name` (with the version) names its cache.
    Without `versions` it is one of Spark's own, at the installed Spark's version.
    `key` is the worker setting that turns it off (`none`); `fetched` says what `maven`
    brings, as an error about the key tells it."""

    name: str
    artifact: str
    key: str
    fetched: str
    group: str = "org.apache.spark"
    versions: tuple[str, ...] = ()

    @property
    def accepted(self) -> str:
        """What the key accepts, in words."""
        return f"'maven' ({self.fetched}) or 'none'"


def _delta_versions() -> tuple[str, ...]:
    try:
        return (metadata.version("delta-spark"),)
    except metadata.PackageNotFoundError:
        return ()


SPARK_KAFKA: Final = SparkPackage(
    "spark-sql-kafka",
    "spark-sql-kafka-0-10_2.13",
    "kafka.jvm.connector",
    "Spark's Kafka connector from Maven Central",
)
SPARK_AVRO: Final = SparkPackage(
    "spark-avro",
    "spark-avro_2.13",
    "avro.jvm.connector",
    "Spark's Avro support from Maven Central",
)
DELTA: Final = SparkPackage(
    "delta-spark",
    "delta-spark_2.13",
    "delta.jvm.connector",
    "Delta Lake's jars from Maven Central",
    "io.delta",
    _delta_versions(),
)
ICEBERG: Final = SparkPackage(
    "iceberg-spark-runtime",
    "iceberg-spark-runtime-4.0_2.13",
    "iceberg.jvm.connector",
    "Apache Iceberg's Spark runtime from Maven Central",
    "org.apache.iceberg",
    ("1.10.1",),
)
POSTGRESQL_DRIVER: Final = SparkPackage(
    "postgresql-jdbc",
    "postgresql",
    "postgresql.jvm.driver",
    "PostgreSQL's JDBC driver from Maven Central",
    "org.postgresql",
    ("42.7.14",),
)

JVM_PACKAGES: Final = (SPARK_KAFKA, SPARK_AVRO, DELTA, ICEBERG, POSTGRESQL_DRIVER)
"""Every package, in the order they join `spark.jars`."""

JVM_PACKAGE_KEYS: Final = {package.key: package for package in JVM_PACKAGES}


def default_choices() -> dict[str, JvmChoice]:
    """Every package fetched: what a worker that sets none of the keys gets."""
    return dict.fromkeys(JVM_PACKAGE_KEYS, "maven")


def wanted_packages(choices: Mapping[str, JvmChoice]) -> list[SparkPackage]:
    """The packages to fetch when Spark starts: all but those whose key says `none`."""
    return [package for package in JVM_PACKAGES if choices.get(package.key, "maven") == "maven"]
