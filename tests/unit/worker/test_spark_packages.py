"""Which package versions are asked for, and which of their jars join Spark's."""

from __future__ import annotations

from pathlib import Path

from worker.plugins.jvm_packages import SPARK_AVRO, SPARK_KAFKA
from worker.runtime.spark_packages import missing_from, package_bundles


def test_the_exact_version_first_then_the_minor_lines_first_release() -> None:
    names = [bundle.coordinates for bundle in package_bundles(SPARK_KAFKA, "4.0.1")]
    assert names == [
        ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1",),
        ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0",),
    ]
    assert len(package_bundles(SPARK_KAFKA, "4.1.0")) == 1


def test_each_package_has_a_cache_of_its_own_per_version() -> None:
    kafka, avro = (package_bundles(p, "4.0.1")[0] for p in (SPARK_KAFKA, SPARK_AVRO))
    assert (kafka.name, avro.name) == ("spark-sql-kafka-4.0.1", "spark-avro-4.0.1")
    assert avro.coordinates == ("org.apache.spark:spark-avro_2.13:4.0.1",)


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


def test_delta_follows_the_installed_python_package_and_iceberg_its_pin() -> None:
    from importlib.metadata import version

    from worker.plugins.jvm_packages import DELTA, ICEBERG

    (delta,) = package_bundles(DELTA, "4.0.1")
    assert delta.coordinates == (f"io.delta:delta-spark_2.13:{version('delta-spark')}",)
    (iceberg,) = package_bundles(ICEBERG, "4.0.1")
    assert iceberg.coordinates[0].startswith("org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:")
