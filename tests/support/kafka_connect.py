"""Apache Kafka Connect itself, as a distributed worker process on loopback: the
reference the differential REST test and `tests/bench/versus_kafka_connect.py` measure
sparkherd against.

The jars come from Maven Central through `worker.runtime.maven_jars`, resolved once into the
same cache as the broker's (`~/.cache/sparkherd/<bundle>`): `connect-runtime` of the
broker's own version (`sparkherd.broker.kafka_kraft.KAFKA_VERSION`) with its converters and
transforms, and `connect-test-plugins` for `VerifiableSourceConnector` and
`MockSourceConnector` (`org.apache.kafka.connect.tools`). Kafka stopped shipping those in
`connect-runtime` in 4.0 and has published `connect-test-plugins` for 4.0.0 only, so that
one jar is 4.0.0; its connectors use nothing but `connect-api`, which the direct
4.x coordinates below pin to the broker's version.

A `ConnectWorker` is a `ServiceProcess` like `tests.support.processes.WorkerProcess`
(`url`, `start`, `wait_ready`, `stop`, `kill`, `process`), so a bench drives either the
same way.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx

from sparkherd.broker.kafka_kraft import (
    KAFKA_VERSION,
    LOG4J_VERSION,
    console_log4j2,
    java_executable,
    render_properties,
)
from tests.support.polling import wait_until
from tests.support.processes import ServiceProcess, free_port
from worker.runtime.maven_jars import JarBundle, bundle_dir, cache_root, classpath, resolve_jars

TEST_PLUGINS_VERSION: Final = "4.0.0"
"""The newest `connect-test-plugins` on Maven Central (4.1.x is not published)."""
CONNECT_JARS: Final = JarBundle(
    f"kafka-connect-{KAFKA_VERSION}-test-plugins-{TEST_PLUGINS_VERSION}",
    (
        f"org.apache.kafka:connect-runtime:{KAFKA_VERSION}",
        f"org.apache.kafka:connect-api:{KAFKA_VERSION}",
        f"org.apache.kafka:connect-json:{KAFKA_VERSION}",
        f"org.apache.kafka:connect-transforms:{KAFKA_VERSION}",
        f"org.apache.kafka:kafka-clients:{KAFKA_VERSION}",
        # VerifiableSourceTask's ThroughputThrottler lives here.
        f"org.apache.kafka:kafka-server-common:{KAFKA_VERSION}",
        f"org.apache.kafka:connect-test-plugins:{TEST_PLUGINS_VERSION}",
        # Connect logs through SLF4J 1.7; without this binding it would log nothing.
        f"org.apache.logging.log4j:log4j-slf4j-impl:{LOG4J_VERSION}",
    ),
)
VERIFIABLE_SOURCE: Final = "org.apache.kafka.connect.tools.VerifiableSourceConnector"
MOCK_SOURCE: Final = "org.apache.kafka.connect.tools.MockSourceConnector"
MAIN_CLASS: Final = "org.apache.kafka.connect.cli.ConnectDistributed"
JVM_OPTIONS: Final = ("-Xms128m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true")

LOG4J2_PROPERTIES: Final = console_log4j2(
    {"clients": "org.apache.kafka.clients", "common": "org.apache.kafka.common"}
)
"""Connect's own logs at INFO (its rebalances are what a bench reads); the clients'
configuration dumps at WARN."""


def connect_jars(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Kafka Connect's classpath: resolved with `mvn` on first use, cached after."""
    return resolve_jars(CONNECT_JARS, cache_root(os.environ if environ is None else environ))


def plugin_path(
    root: Path, plugin: JarBundle, name: str, environ: Mapping[str, str] | None = None
) -> Path:
    """A `plugin.path` directory under `root` holding `plugin` as the directory `name`
    (a link to the bundle, resolved with `mvn` on first use and cached after), which
    Connect loads in a class loader of its own."""
    cache = cache_root(os.environ if environ is None else environ)
    resolve_jars(plugin, cache)
    plugins = root / "plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    link = plugins / name
    if not link.exists():
        link.symlink_to(bundle_dir(plugin, cache), target_is_directory=True)
    return plugins


@dataclass
class ConnectWorker(ServiceProcess):
    """One `ConnectDistributed` JVM with its own REST port, properties and log file.

    Its worker id is `127.0.0.1:<rest_port>`, so a new process on the same port is the
    same worker to the group (Connect has no `group.instance.id`)."""

    name: str
    bootstrap_servers: str
    group_id: str
    log_dir: Path
    settings: Mapping[str, str] = field(default_factory=dict)
    """Worker properties over the defaults of `properties()`."""
    rest_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    jvm_options: Sequence[str] = JVM_OPTIONS
    """A bench comparing throughput gives the JVM the heap the other system gets."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def worker_id(self) -> str:
        return f"127.0.0.1:{self.rest_port}"

    def properties(self) -> dict[str, str]:
        """A distributed worker of group `group_id`, its three topics named after the
        group, JSON without schemas, offsets flushed every second."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "config.storage.topic": f"{self.group_id}-configs",
            "offset.storage.topic": f"{self.group_id}-offsets",
            "status.storage.topic": f"{self.group_id}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.storage.partitions": "1",
            "status.storage.partitions": "1",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "listeners": f"http://127.0.0.1:{self.rest_port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.rest_port),
            "offset.flush.interval.ms": "1000",
            "plugin.discovery": "service_load",
            **self.settings,
        }

    def command(self) -> list[str]:
        directory = self.log_dir / self.name
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / "connect-distributed.properties"
        config.write_text(render_properties(self.properties()), encoding="utf-8")
        logging_config = directory / "log4j2.properties"
        logging_config.write_text(LOG4J2_PROPERTIES, encoding="utf-8")
        return [
            java_executable(os.environ),
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={logging_config}",
            "-cp",
            classpath(connect_jars()),
            MAIN_CLASS,
            str(config),
        ]

    def start(self) -> ConnectWorker:
        self._spawn(self.command())
        return self

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Until `/health` answers 200 (KIP-1017: joined, configs read)."""

        def health() -> int:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited: {self.log_tail()}")
            return httpx.get(f"{self.url}/health", timeout=2).status_code

        wait_until(
            health,
            timeout_s,
            interval_s=0.2,
            what=f"Kafka Connect {self.name} to answer /health with 200",
            until=lambda status: status == 200,
        )

    def log_tail(self, lines: int = 20) -> str:
        """The end of the log without the connector's own JSON lines (one per record)."""
        kept = [line for line in self.log_text().splitlines() if not line.startswith("{")]
        return "\n".join(kept[-lines:])

    def restarted(self) -> ConnectWorker:
        """A new, not yet started process for the same worker (same port and settings)."""
        return ConnectWorker(
            self.name,
            self.bootstrap_servers,
            self.group_id,
            self.log_dir,
            dict(self.settings),
            self.rest_port,
            jvm_options=self.jvm_options,
        )


def verifiable_source_config(topic: str, tasks: int, throughput: int) -> dict[str, str]:
    """Each task produces `throughput` records a second to `topic`, keyed by its task id,
    each value `{name, task, topic, time_ms, seqno}` (JSON), resuming its `seqno` from
    its committed offset after a restart."""
    return {
        "connector.class": VERIFIABLE_SOURCE,
        "tasks.max": str(tasks),
        "topic": topic,
        "throughput": str(throughput),
        "complete.record.data": "true",
    }
