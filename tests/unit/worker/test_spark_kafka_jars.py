"""Which connector versions are asked for, and which of their jars join Spark's."""

from __future__ import annotations

from pathlib import Path

from worker.spark_kafka_jars import connector_bundles, missing_from


def test_the_exact_version_first_then_the_minor_lines_first_release() -> None:
    names = [bundle.coordinates for bundle in connector_bundles("4.0.1")]
    assert names == [
        ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1",),
        ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0",),
    ]
    assert len(connector_bundles("4.1.0")) == 1


def test_only_artifacts_spark_does_not_ship_are_added(tmp_path: Path) -> None:
    shipped = tmp_path / "jars"
    shipped.mkdir()
    shipped_names = (
        "hadoop-client-api-3.4.1.jar",
        "scala-library-2.13.16.jar",
        "spark-sql-kafka-0-10_2.12-3.5.0.jar",
        "zstd-jni-1.5.6-10.jar",
    )
    for name in shipped_names:
        (shipped / name).touch()
    resolved = [
        tmp_path / name
        for name in (
            "hadoop-client-api-3.4.1.jar",
            "scala-library-2.13.15.jar",
            "kafka-clients-3.9.0.jar",
            "spark-sql-kafka-0-10_2.13-4.0.0.jar",
            "commons-pool2-2.12.0.jar",
            "zstd-jni-1.5.7-2.jar",
        )
    ]
    assert [jar.name for jar in missing_from(resolved, shipped)] == [
        "kafka-clients-3.9.0.jar",
        "spark-sql-kafka-0-10_2.13-4.0.0.jar",
        "commons-pool2-2.12.0.jar",
    ]
