"""The JVM options of every Spark driver a test starts, in a worker or in the test itself.

A test's JVM lives for seconds or minutes, and most of what it runs, it runs once: the
client compiler alone (`TieredStopAtLevel=1`) and the one-thread collector start Spark
and run its first job on half the CPU (a SparkSession's start 7.9 -> 4.4 CPU seconds, its
first aggregation 5.9 -> 3.5, on the 2-core machine), and the class archive `make test`
dumps (`tests.support.spark_class_archive`) halves that again; a suite of two lanes on two
cores gets it back as wall time. A deployment keeps the JVM's defaults; the benches do too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

SHORT_LIVED_JVM: Final = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
SPARK_CLASS_ARCHIVE: Final = Path(__file__).resolve().parents[2] / "build" / "spark-classes.jsa"
"""Where `make test` puts the archive; a run without it (pytest alone) is only slower."""


def spark_driver_options() -> str:
    """`spark.driver.extraJavaOptions` of a test's Spark driver."""
    if SPARK_CLASS_ARCHIVE.exists():
        return f"{SHORT_LIVED_JVM} -XX:SharedArchiveFile={SPARK_CLASS_ARCHIVE}"
    return SHORT_LIVED_JVM
