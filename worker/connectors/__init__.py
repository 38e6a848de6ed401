"""The connectors shipped with sparkherd, and the registry a worker starts with."""

from __future__ import annotations

from worker.admission.registry import PluginRegistry
from worker.connectors.delta.kafka_to_delta import KafkaToDeltaConnector
from worker.connectors.files.files_to_kafka import FilesToKafkaConnector
from worker.connectors.files.kafka_to_files import KafkaToFilesConnector
from worker.connectors.generator import GeneratorConnector
from worker.connectors.iceberg.kafka_to_iceberg import KafkaToIcebergConnector
from worker.connectors.jdbc.jdbc_to_kafka import JdbcToKafkaConnector
from worker.connectors.jdbc.kafka_to_jdbc import KafkaToJdbcConnector
from worker.plugins.api import Connector

BUILTIN_CONNECTORS: tuple[type[Connector], ...] = (
    FilesToKafkaConnector,
    GeneratorConnector,
    JdbcToKafkaConnector,
    KafkaToDeltaConnector,
    KafkaToFilesConnector,
    KafkaToIcebergConnector,
    KafkaToJdbcConnector,
)


def default_registry() -> PluginRegistry:
    """The built-in connectors plus every plugin installed under `sparkherd.connectors`."""
    return PluginRegistry.discover(BUILTIN_CONNECTORS)
