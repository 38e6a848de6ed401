"""All of the worker that the REST layer uses, in one place.

The REST API reads worker types (task states, progress, offsets as values), checks what
the worker checks (names, config bounds, JSON nesting) and asks the plugin registry what a
connector is. Every such name comes through this module and no other module of rest/
imports worker/ (tests/unit/test_layers.py holds it), so a move inside worker/ changes one
file here and the REST layer's dependence on the worker is read in one sitting.
"""

from worker.admission.connector_configs import RegistryPlugins
from worker.admission.record_plugins import find_record_plugin, record_plugins
from worker.admission.registry import (
    CONNECTOR_CLASS,
    CONNECTOR_VERSION,
    FrameworkSettings,
    PluginRegistry,
    UnknownPluginError,
    plugin_version,
    qualified_name,
)
from worker.admission.shown_configs import HiddenSecretError, kept_secrets, shown_config
from worker.config import WorkerConfig
from worker.config.bounds import check_config_bounds
from worker.driver_load import driver_load
from worker.plugins.api import HIDDEN, ConfigProblem, Connector
from worker.plugins.names import InvalidName, check_name
from worker.plugins.task_state import StartupCounts, TaskState
from worker.plugins.versions import LATEST, version_problem
from worker.records.errors.task_errors import BatchErrors
from worker.records.nesting import json_nesting_problem
from worker.records.transforms.catalog import Setting, chain_definitions
from worker.runtime.task_offsets import (
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    OffsetsError,
    check_offset,
    sink_alterations,
    sink_entries,
    task_partition,
)
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import TriggerLag, overload_line, tasks_behind

__all__ = [
    "CONNECTOR_CLASS",
    "CONNECTOR_VERSION",
    "HIDDEN",
    "KAFKA_PARTITION",
    "KAFKA_TOPIC",
    "LATEST",
    "BatchErrors",
    "ConfigProblem",
    "Connector",
    "FrameworkSettings",
    "HiddenSecretError",
    "InvalidName",
    "OffsetsError",
    "PluginRegistry",
    "RegistryPlugins",
    "Setting",
    "StartupCounts",
    "TaskProgress",
    "TaskState",
    "TriggerLag",
    "UnknownPluginError",
    "WorkerConfig",
    "chain_definitions",
    "check_config_bounds",
    "check_name",
    "check_offset",
    "driver_load",
    "find_record_plugin",
    "json_nesting_problem",
    "kept_secrets",
    "overload_line",
    "plugin_version",
    "qualified_name",
    "record_plugins",
    "shown_config",
    "sink_alterations",
    "sink_entries",
    "task_partition",
    "tasks_behind",
    "version_problem",
]
