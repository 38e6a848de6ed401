"""The JVM packages' one list: the worker config, the service and the packages' origins
all read `JVM_PACKAGES`, so a sink's jar added there is a key, fetched, and turned off by
its key, with no second list to keep in step."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

import sparkherd.service
from worker.config import ConfigError, WorkerConfig
from worker.plugins.jvm_packages import JVM_PACKAGES, SparkPackage, wanted_packages

DOCS = Path(__file__).parents[3] / "docs" / "operations" / "configuration.md"


def fetched_by_the_service(
    settings: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> list[SparkPackage]:
    """The packages a worker with `settings` asks Maven for when its Spark starts."""
    asked: list[SparkPackage] = []

    def record(packages: Sequence[SparkPackage], environ: object) -> list[Path]:
        asked.extend(packages)
        return []

    monkeypatch.setattr(sparkherd.service, "spark_package_jars", record)
    config = WorkerConfig.from_mapping(settings)
    extra_jars = sparkherd.service._spark_packages(config)
    assert extra_jars is not None
    extra_jars()
    return asked


def test_by_default_the_service_fetches_every_package_of_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert fetched_by_the_service({}, monkeypatch) == list(JVM_PACKAGES)


@pytest.mark.parametrize("off", JVM_PACKAGES, ids=lambda p: p.key)
def test_each_packages_key_turns_off_that_package_alone(
    off: SparkPackage, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched = fetched_by_the_service({off.key: "none"}, monkeypatch)
    assert fetched == [p for p in JVM_PACKAGES if p is not off]


def test_with_every_key_off_the_service_fetches_nothing() -> None:
    config = WorkerConfig.from_mapping({p.key: "none" for p in JVM_PACKAGES})
    assert wanted_packages(config.jvm_packages) == []
    assert sparkherd.service._spark_packages(config) is None


@pytest.mark.parametrize("package", JVM_PACKAGES, ids=lambda p: p.key)
def test_a_value_neither_maven_nor_none_is_refused_naming_the_key(package: SparkPackage) -> None:
    with pytest.raises(ConfigError) as refused:
        WorkerConfig.from_mapping({package.key: "ivy"})
    assert refused.value.key == package.key
    assert f"'{package.key}' must be 'maven' ({package.fetched}) or 'none'" in str(refused.value)


def test_a_misspelt_key_is_unknown_and_the_table_suggests_the_right_one() -> None:
    with pytest.raises(ConfigError) as refused:
        WorkerConfig.from_mapping({"iceberg.jvm.conector": "none"})
    assert "did you mean 'iceberg.jvm.connector'?" in refused.value.hints


def test_every_key_of_the_table_is_documented() -> None:
    documented = DOCS.read_text()
    assert [p.key for p in JVM_PACKAGES if f"| `{p.key}` |" not in documented] == []
