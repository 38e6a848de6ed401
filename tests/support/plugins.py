"""`RegistryPlugins` as tests build it: no config providers and the default limits, or a
`directory` provider over a secrets directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.admission.connector_configs import RegistryPlugins
from worker.admission.registry import PluginRegistry
from worker.config import WorkerConfig
from worker.config.providers import ConfigProviders
from worker.connectors import default_registry

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def no_spark() -> SparkSession:
    raise AssertionError("this test has no SparkSession; no plugin here should ask for one")


def plugins_for(
    registry: PluginRegistry,
    checkpoint_root: Path,
    spark: Callable[[], SparkSession] = no_spark,
    **worker: Any,
) -> RegistryPlugins:
    """`worker`: more of the worker's settings, as `RegistryPlugins` takes them."""
    return RegistryPlugins(
        registry,
        providers=ConfigProviders.from_worker_settings({}, {}),
        checkpoint_root=checkpoint_root,
        tasks_max_limit=WorkerConfig().tasks_max_limit,
        spark=spark,
        **worker,
    )


def plugins_with_secrets(
    secrets: Path, tmp_path: Path, tasks_max_limit: int = 1000
) -> RegistryPlugins:
    """The default plugins, with placeholders `${dir:<secrets>:<file>}` allowed."""
    providers = ConfigProviders.from_worker_settings(
        {
            "config.providers": "dir",
            "config.providers.dir.class": "directory",
            "config.providers.dir.param.allowed.paths": str(secrets),
        },
        {},
    )
    return RegistryPlugins(
        default_registry(),
        providers=providers,
        checkpoint_root=tmp_path / "checkpoints",
        tasks_max_limit=tasks_max_limit,
        spark=no_spark,
        cwd=tmp_path,
    )
