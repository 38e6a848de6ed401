"""The worker's log4j files for Spark's JVM name loggers that exist: log4j accepts any
name, so a logger that names no class of the installed jars silences nothing, quietly."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pyspark
import pytest

from worker.config.properties import parse_properties
from worker.runtime.spark_session import SPARK_LOG_CONFIGS

LOG_CONFIGS = list(SPARK_LOG_CONFIGS.values())
"""The files the worker hands Spark's JVM, where it looks for them: a file moved away from
its module leaves Spark on its defaults, with no error (c2ffbe3 did, and CI's log test
caught what this test did not)."""
JARS = Path(pyspark.__file__).parent / "jars"
CANCEL_WARNING = (
    "Failed to cancel job group 5f0c0b6e-3a1e-4d7e-9b1a-0c2f4e8d6a21. "
    "Cannot find active jobs for it."
)


def test_every_log_config_the_worker_names_exists() -> None:
    assert [path for path in LOG_CONFIGS if not path.is_file()] == []


def missing_classes(names: set[str]) -> set[str]:
    """Those of `names` that no jar of the installed PySpark holds."""
    missing = {name.replace(".", "/") + ".class": name for name in names}
    for jar in sorted(JARS.glob("*.jar")):
        with zipfile.ZipFile(jar) as archive:
            for entry in set(missing) & set(archive.namelist()):
                del missing[entry]
        if not missing:
            break
    return set(missing.values())


def loggers(config: Path) -> dict[str, dict[str, str]]:
    """`logger.<id>.<rest>` settings by the logger's name."""
    by_id: dict[str, dict[str, str]] = {}
    for key, value in parse_properties(config.read_text(encoding="utf-8")).items():
        if key.startswith("logger."):
            logger_id, _, rest = key.removeprefix("logger.").partition(".")
            by_id.setdefault(logger_id, {})[rest] = value
    return {settings["name"]: settings for settings in by_id.values()}


@pytest.mark.parametrize("config", LOG_CONFIGS, ids=lambda path: path.name)
def test_every_logger_names_a_class_of_the_installed_jars(config: Path) -> None:
    assert missing_classes(set(loggers(config))) == set()


@pytest.mark.parametrize("config", LOG_CONFIGS, ids=lambda path: path.name)
def test_routine_streaming_warnings_are_configured_away(config: Path) -> None:
    settings = loggers(config)
    behind = settings["org.apache.spark.sql.execution.streaming.ProcessingTimeExecutor"]
    assert behind["level"] == "error"
    scheduler = settings["org.apache.spark.scheduler.DAGScheduler"]
    assert scheduler["level"] == "warn", "the scheduler's other warnings stay"
    assert scheduler["filter.cancel.type"] == "RegexFilter"
    assert re.fullmatch(scheduler["filter.cancel.regex"], CANCEL_WARNING)
    assert not re.fullmatch(scheduler["filter.cancel.regex"], "Executor lost: 1 (epoch 0)")
    assert (scheduler["filter.cancel.onMatch"], scheduler["filter.cancel.onMismatch"]) == (
        "DENY",
        "NEUTRAL",
    )


@pytest.mark.parametrize("config", LOG_CONFIGS, ids=lambda path: path.name)
def test_spark_never_logs_a_failed_query_itself(config: Path) -> None:
    """Its message may quote a resolved secret (a path); the worker logs the failure with
    every placeholder's value hidden."""
    query = loggers(config)["org.apache.spark.sql.execution.streaming.MicroBatchExecution"]
    assert query["level"] == "off"
