"""Apache Kafka 4.x as a single-node KRaft broker (broker and controller in one JVM).

This is the broker sparkherd's users run in production, started locally: the jars come
from Maven Central through `maven_jars` (no distribution tarball), the storage is
formatted on first start and kept under `data_dir` across restarts, so connectors,
offsets and statuses survive a restart of `sparkherd up --broker kafka`.

The settings are Kafka's own development defaults (those of its `config/server.properties`:
one partition, replication factor 1, `group.initial.rebalance.delay.ms=0`), with the
controller on a second loopback port picked at each start: a static
`controller.quorum.voters` is configuration, not stored state, so it may change.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from worker.runtime.maven_jars import JarBundle, cache_root, classpath, resolve_jars

KAFKA_VERSION: Final = "4.1.1"
LOG4J_VERSION: Final = "2.24.3"
KAFKA_JARS: Final = JarBundle(
    f"kafka-{KAFKA_VERSION}",
    (
        f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
        # Kafka logs through SLF4J 1.7; without this binding it would log nothing.
        f"org.apache.logging.log4j:log4j-slf4j-impl:{LOG4J_VERSION}",
    ),
)
NODE_ID: Final = 1
BROKER_LISTENER: Final = "BROKER"
CONTROLLER_LISTENER: Final = "CONTROLLER"
META_PROPERTIES: Final = "meta.properties"
JVM_OPTIONS: Final = ("-Xms256m", "-Xmx1g", "-XX:+UseG1GC", "-Djava.awt.headless=true")


def console_log4j2(quiet_loggers: Mapping[str, str]) -> str:
    """A log4j2 configuration for a Kafka JVM (broker, Connect worker): INFO to the
    console, the loggers named (property prefix -> logger) at WARN."""
    lines = [
        "status = warn",
        "appender.out.type = Console",
        "appender.out.name = out",
        "appender.out.layout.type = PatternLayout",
        "appender.out.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.out.ref = out",
    ]
    for prefix, logger in quiet_loggers.items():
        lines += [f"logger.{prefix}.name = {logger}", f"logger.{prefix}.level = WARN"]
    return "\n".join(lines) + "\n"


LOG4J2_PROPERTIES: Final = console_log4j2(
    {"kafka": "org.apache.kafka", "raft": "org.apache.kafka.raft", "state": "state.change.logger"}
)


class KafkaStorageError(RuntimeError):
    """`kafka-storage format` failed: the data directory is unusable."""


@dataclass
class ListenerSecurity:
    """How clients reach the broker: the listener's protocol and its `listener.name.*`
    settings (keys without the prefix), and the SCRAM users created when the storage is
    formatted (`SCRAM-SHA-512=[name=u,password=p]`, as `kafka-storage --add-scram`)."""

    protocol: str = "PLAINTEXT"
    settings: Mapping[str, str] = field(default_factory=dict)
    scram_users: Sequence[str] = ()


@dataclass
class KafkaKRaftEngine:
    """Prepares the command line of one single-node Apache Kafka broker."""

    data_dir: Path
    security: ListenerSecurity = field(default_factory=ListenerSecurity)
    extra_properties: Mapping[str, str] = field(default_factory=dict)
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    name: str = "kafka"
    start_timeout_s: float = 90.0
    stop_grace_s: float = 30.0

    def prepare(self, host: str, port: int) -> list[str]:
        """Resolve the jars (Maven, first use only), write the broker's config, format
        the storage when it is new, and return the broker's command line."""
        jars = resolve_jars(KAFKA_JARS, cache_root(self.environ))
        controller_port = free_port(host)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.data_dir / "server.properties"
        config.write_text(
            render_properties(self.properties(host, port, controller_port)), encoding="utf-8"
        )
        logging_config = self.data_dir / "log4j2.properties"
        logging_config.write_text(LOG4J2_PROPERTIES, encoding="utf-8")
        java = [java_executable(self.environ), f"-Dlog4j2.configurationFile={logging_config}"]
        java += ["-cp", classpath(jars)]
        if not (self.log_dir / META_PROPERTIES).exists():
            self._format(java, config)
        return [*java[:1], *JVM_OPTIONS, *java[1:], "kafka.Kafka", str(config)]

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "kraft-log"

    def properties(self, host: str, port: int, controller_port: int) -> dict[str, str]:
        protocol = self.security.protocol
        listener_settings = {
            f"listener.name.{BROKER_LISTENER.lower()}.{key}": value
            for key, value in self.security.settings.items()
        }
        if mechanisms := self.security.settings.get("sasl.enabled.mechanisms"):
            # The one listener is also the inter-broker one: it logs in to itself.
            listener_settings["sasl.mechanism.inter.broker.protocol"] = mechanisms.split(",")[0]
        return {
            "process.roles": "broker,controller",
            "node.id": str(NODE_ID),
            "controller.quorum.voters": f"{NODE_ID}@{host}:{controller_port}",
            "listeners": (
                f"{BROKER_LISTENER}://{host}:{port},"
                f"{CONTROLLER_LISTENER}://{host}:{controller_port}"
            ),
            "advertised.listeners": f"{BROKER_LISTENER}://{host}:{port}",
            "listener.security.protocol.map": (
                f"{BROKER_LISTENER}:{protocol},{CONTROLLER_LISTENER}:PLAINTEXT"
            ),
            "controller.listener.names": CONTROLLER_LISTENER,
            "inter.broker.listener.name": BROKER_LISTENER,
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **listener_settings,
            **self.extra_properties,
        }

    def _format(self, java: list[str], config: Path) -> None:
        scram = [arg for user in self.security.scram_users for arg in ("--add-scram", user)]
        result = subprocess.run(
            [
                *java,
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                new_cluster_id(),
                "--config",
                str(config),
                "--ignore-formatted",
                *scram,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            last = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:]
            raise KafkaStorageError(
                f"formatting Kafka storage in {self.log_dir} failed: {' '.join(last)}"
            )


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def new_cluster_id() -> str:
    """A cluster id as `kafka-storage random-uuid` makes one: 16 random bytes, base64url,
    never starting with '-' (a command line would read it as an option)."""
    while (cluster_id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode()).startswith("-"):
        pass
    return cluster_id.rstrip("=")


def render_properties(properties: Mapping[str, str]) -> str:
    """Java .properties text; values are written verbatim except for line breaks,
    which would start a new key."""
    lines = []
    for key, value in properties.items():
        if "\n" in key + value or "\r" in key + value:
            raise ValueError(f"a broker setting may not contain a line break: {key}")
        lines.append(f"{key}={value.replace(chr(92), chr(92) * 2)}")
    return "\n".join(lines) + "\n"


def java_executable(environ: Mapping[str, str]) -> str:
    """`$JAVA_HOME/bin/java`, else the `java` on the PATH."""
    if home := environ.get("JAVA_HOME"):
        return str(Path(home) / "bin" / "java")
    return shutil.which("java") or "java"
