"""Apache Iceberg's own Kafka Connect sink, for a `ConnectWorker` to run beside sparkherd's
`kafka-to-iceberg` (tests/bench/versus_iceberg_kafka_connect.py).

Iceberg publishes the sink to Maven Central as `iceberg-kafka-connect` (with
`iceberg-kafka-connect-events`, `iceberg-data` and `iceberg-core` in its runtime
closure) but not the runtime archive its build assembles, so the bundle here adds what
that archive adds for a Hadoop catalog writing Parquet: `iceberg-parquet` and Hadoop's
shaded client (`hadoop-client-api` with `hadoop-client-runtime`, so none of Hadoop's own
dependencies meet Connect's). Kafka's jars are left out: the worker's classpath has
them, and a second copy inside the plugin would shadow the runtime's. The version is
that of the Iceberg Spark runtime sparkherd's workers load (`worker.plugins.jvm_packages`), so
both systems write tables with the same library.

The jars are a Connect plugin: `plugin.path` names a directory holding one directory of
them (a link to the cached bundle), which Connect loads in a class loader of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.support.kafka_connect import plugin_path
from worker.plugins.jvm_packages import ICEBERG
from worker.runtime.maven_jars import JarBundle

ICEBERG_VERSION: Final = ICEBERG.versions[0]
HADOOP_VERSION: Final = "3.4.1"
"""The Hadoop line Iceberg 1.10 builds against."""
ICEBERG_SINK_JARS: Final = JarBundle(
    f"iceberg-kafka-connect-{ICEBERG_VERSION}-hadoop-{HADOOP_VERSION}",
    (
        f"org.apache.iceberg:iceberg-kafka-connect:{ICEBERG_VERSION}",
        f"org.apache.iceberg:iceberg-parquet:{ICEBERG_VERSION}",
        f"org.apache.hadoop:hadoop-client-api:{HADOOP_VERSION}",
        f"org.apache.hadoop:hadoop-client-runtime:{HADOOP_VERSION}",
    ),
    exclusions=("org.apache.kafka:*",),
)
ICEBERG_SINK: Final = "org.apache.iceberg.connect.IcebergSinkConnector"
PLUGIN_NAME: Final = "iceberg-kafka-connect"


def iceberg_plugin_path(root: Path) -> Path:
    """A `plugin.path` directory under `root` holding the sink."""
    return plugin_path(root, ICEBERG_SINK_JARS, PLUGIN_NAME)


def iceberg_sink_config(
    topics: str,
    table: str,
    warehouse: Path,
    commit_interval_ms: int,
    tasks: int,
    control_topic: str,
) -> dict[str, str]:
    """The sink writing `topics` into `table` (`namespace.name`) of a Hadoop catalog at
    `warehouse`, created from the first records' fields, committing every
    `commit_interval_ms` through `control_topic` (one partition, created beforehand)."""
    return {
        "connector.class": ICEBERG_SINK,
        "tasks.max": str(tasks),
        "topics": topics,
        "iceberg.tables": table,
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.catalog.type": "hadoop",
        "iceberg.catalog.warehouse": warehouse.as_uri(),
        "iceberg.control.topic": control_topic,
        "iceberg.control.commit.interval-ms": str(commit_interval_ms),
    }
