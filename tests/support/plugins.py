"""`RegistryPlugins` as tests build it: no config providers, the default limits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from worker.config import WorkerConfig
from worker.config_providers import ConfigProviders
from worker.connector_configs import RegistryPlugins
from worker.plugin_registry import PluginRegistry

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def no_spark() -> SparkSession:
    raise AssertionError("this test has no SparkSession; no plugin here should ask for one")


def plugins_for(
    registry: PluginRegistry,
    checkpoint_root: Path,
    spark: Callable[[], SparkSession] = no_spark,
) -> RegistryPlugins:
    return RegistryPlugins(
        registry,
        providers=ConfigProviders.from_worker_settings({}, {}),
        checkpoint_root=checkpoint_root,
        tasks_max_limit=WorkerConfig().tasks_max_limit,
        spark=spark,
    )
