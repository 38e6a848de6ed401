"""Where a connector's Kafka is and how to log in to it, in one value.

A connector names its cluster with `kafka.bootstrap.servers` and, for a secured one,
`kafka.security.protocol`, `kafka.sasl.*` and `kafka.ssl.*` (Kafka Connect's names with
the connector's `kafka.` prefix). The worker's `consumer.*`/`producer.*` security keys
are the defaults a connector of the worker's own cluster inherits (`same_cluster`, see
`RegistryPlugins`). The same value travels to
Spark: as `kafka.*` options to Spark's JVM connector, as plain options to the
`sparkherd-kafka` data source, and inside each input partition to the executors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, model_validator

from worker.kafka.client import BlockingKafka, IsolationLevel
from worker.kafka.security import (
    SECURITY_KEYS,
    KafkaClientSecurity,
    KafkaSecurityError,
    client_security,
)
from worker.plugins.api import NonEmptyStr

CONNECTOR_PREFIX: Final = "kafka."
CLIENT_FILE_KEYS: Final = tuple(
    f"{CONNECTOR_PREFIX}ssl.{store}.location" for store in ("truststore", "keystore")
)
"""A connector's own settings that name files on the worker for its Kafka clients."""


def same_cluster(connector_servers: str, worker_servers: str) -> bool:
    """Whether a connector's `kafka.bootstrap.servers` names only brokers the worker
    itself bootstraps from: then, and only then, it may log in with the worker's own
    credentials. Compared as written (host:port, case aside): another name for the same
    broker counts as another cluster, which must bring its own login."""

    def servers(text: str) -> set[str]:
        return {server.strip().lower() for server in text.split(",") if server.strip()}

    mine = servers(connector_servers)
    return bool(mine) and mine <= servers(worker_servers)


@dataclass(frozen=True)
class KafkaConnection:
    bootstrap_servers: str
    security_settings: tuple[tuple[str, str], ...] = ()
    """Connect-named security keys (`security.protocol`, `sasl.jaas.config`, ...)."""

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> KafkaConnection:
        """From the `sparkherd-kafka` data source's options (see `source_options`)."""
        return cls(
            options["bootstrap.servers"],
            tuple(sorted((k, v) for k, v in options.items() if k in SECURITY_KEYS)),
        )

    def security(self) -> KafkaClientSecurity:
        return client_security(dict(self.security_settings), CONNECTOR_PREFIX)

    def open(
        self, client_id: str, isolation_level: IsolationLevel = "read_uncommitted"
    ) -> BlockingKafka:
        return BlockingKafka(self.bootstrap_servers, client_id, self.security(), isolation_level)

    def source_options(self) -> dict[str, str]:
        """Options of the `sparkherd-kafka` data source."""
        return {"bootstrap.servers": self.bootstrap_servers, **dict(self.security_settings)}

    def jvm_options(self) -> dict[str, str]:
        """Options of Spark's JVM Kafka connector, which hands `kafka.*` to its client."""
        return {f"{CONNECTOR_PREFIX}{key}": value for key, value in self.source_options().items()}


class KafkaConnectionSettings(BaseModel):
    """The settings of a connector that reads or writes Kafka: a base for its model."""

    model_config = ConfigDict(frozen=True)

    bootstrap_servers: NonEmptyStr = Field(alias="kafka.bootstrap.servers")
    kafka_security_settings: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _collect_security(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        security = {
            key[len(CONNECTOR_PREFIX) :]: value
            for key, value in data.items()
            if key.startswith(CONNECTOR_PREFIX) and key[len(CONNECTOR_PREFIX) :] in SECURITY_KEYS
        }
        return {**data, "kafka_security_settings": security}

    @model_validator(mode="after")
    def _check_security(self) -> KafkaConnectionSettings:
        try:
            self.connection.security()
        except KafkaSecurityError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def connection(self) -> KafkaConnection:
        return KafkaConnection(
            self.bootstrap_servers, tuple(sorted(self.kafka_security_settings.items()))
        )
