"""One worker process: the herder, the Spark task runtime and the REST server, wired together.

Shutdown order matters for rolling bounces: tasks are stopped (progress committed) and the
group is left *before* the REST server goes away, so the next owner of the work can start
it as soon as the group rebalances.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Final, Protocol

import uvicorn

from herder.herder import DistributedHerder
from herder.member.group_member import GroupMember
from herder.settings import HerderSettings
from herder.stores.config_store import ConfigStore
from herder.stores.kafka_log import KafkaLog
from herder.stores.status_store import StatusStore
from herder.stores.topics import ensure_compacted_topics
from herder.tasks.auto_restart import RestartPolicy
from protocol import PROTOCOL_NAME
from rest.app import create_app
from rest.loggers import LoggerLevels
from rest.security import RestSecurity
from worker.admission.connector_configs import RegistryPlugins
from worker.admission.registry import PluginRegistry, UnknownPluginError
from worker.admission.stored_config_vet import StoredConfigVet
from worker.config import ConfigError, WorkerConfig
from worker.config.providers import ConfigProviders
from worker.connectors import default_registry
from worker.driver_load import driver_load
from worker.kafka.connection import KafkaConnection
from worker.kafka.security import security_settings
from worker.plugins.api import Connector, has_own_warm_up
from worker.plugins.jvm_packages import wanted_packages
from worker.runtime.spark_packages import spark_package_jars
from worker.runtime.spark_session import SparkSessionProvider
from worker.runtime.spark_task_runtime import SparkTaskRuntime
from worker.runtime.spark_warm_up import OwnTopic
from worker.runtime.temp_space import remove_stale_temp_spaces

log = logging.getLogger(__name__)

REST_KEEP_ALIVE_S: Final = 75
"""How long the REST server keeps an idle connection open: longer than the clients and
proxies in front of it keep theirs (httpx 5 s, load balancers 60 s), so a client never
sends a request on a connection the server is closing at that instant. Uvicorn's 5 s
default equalled httpx's, and a client's POST met "Server disconnected without sending
a response" in a CI run."""


class ListenError(OSError):
    """The REST port could not be bound (usually: already in use)."""


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the worker decides the shutdown order."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_rest_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port} for REST: {exc.strerror}") from exc
    return sock


def source_commit() -> str:
    """The git commit of the running code when run from a checkout, else 'unknown'."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _warm_up_plugins(config: WorkerConfig, registry: PluginRegistry) -> list[type[Connector]]:
    """The plugins `worker.warmup.connectors` names (unset: every one) that have a
    warm-up of their own. A name no plugin has stops the worker before it starts."""
    names = config.worker_warmup_connectors
    try:
        chosen = registry.list_plugins() if names is None else list(map(registry.resolve, names))
    except UnknownPluginError as exc:
        raise ConfigError(f"worker.warmup.connectors: {exc}", "worker.warmup.connectors") from None
    return [plugin for plugin in chosen if has_own_warm_up(plugin)]


def _warm_up_topic(config: WorkerConfig) -> OwnTopic:
    """The config topic, read once through Spark's Kafka connector by the warm-up with
    the worker's own consumer login (the topic always exists by then)."""
    security = security_settings(config.kafka_security_settings, "consumer")
    connection = KafkaConnection(config.bootstrap_servers, tuple(sorted(security.items())))
    return OwnTopic(config.config_storage_topic, connection.jvm_options())


def _spark_packages(config: WorkerConfig) -> Callable[[], list[Path]] | None:
    """Spark's packages the worker fetches from Maven Central when Spark starts."""
    packages = wanted_packages(config.jvm_packages)
    return (lambda: spark_package_jars(packages, os.environ)) if packages else None


def restart_policy(config: WorkerConfig) -> RestartPolicy:
    """The worker's `auto.restart.*`, as the herder applies them."""
    return RestartPolicy(
        enabled=config.auto_restart_enabled,
        max_attempts=config.auto_restart_max_attempts,
        initial_backoff_ms=config.auto_restart_initial_backoff_ms,
        max_backoff_ms=config.auto_restart_max_backoff_ms,
    )


class WorkerService:
    """Builds the worker's parts from its config and runs them until asked to stop."""

    def __init__(
        self,
        config: WorkerConfig,
        rest_security: RestSecurity,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`rest_security` is read from `config` before anything starts (by the caller, so a
        bad credentials file stops the worker at once); `env` is what the `env` config
        provider reads (default: this process's)."""
        self.config = config
        self._rest_security = rest_security
        self._spark = SparkSessionProvider(
            config.spark_conf,
            app_name=f"sparkherd-{config.worker_id}",
            log_format=config.log_format,
            extra_jars=_spark_packages(config),
            data_dir=config.data_dir,
        )
        registry = default_registry()
        providers = ConfigProviders.from_worker_settings(
            config.config_provider_settings, os.environ if env is None else env
        )
        self._plugins = RegistryPlugins(
            registry,
            providers=providers,
            checkpoint_root=config.checkpoint_root,
            tasks_max_limit=config.tasks_max_limit,
            allowed_paths=config.connector_allowed_paths,
            spark=self._spark.get,
            kafka_security=config.kafka_security_settings,
            kafka_bootstrap_servers=config.bootstrap_servers,
            converter_defaults=config.converter_settings,
            internal_topics=(
                config.config_storage_topic,
                config.status_storage_topic,
                config.offset_storage_topic,
            ),
        )
        self._runtime = SparkTaskRuntime(
            session=self._spark,
            plugins=self._plugins,
            checkpoint_root=config.checkpoint_root,
            worker_id=config.worker_id,
            shutdown_timeout_ms=config.task_shutdown_graceful_timeout_ms,
            on_state_change=lambda task, status: self.herder.on_task_state(task, status),
            topic_creation_enabled=config.topic_creation_enable,
            start_timeout_ms=config.task_start_timeout_ms,
            own_topic=_warm_up_topic(config),
            warm_up_plugins=_warm_up_plugins(config, registry),
        )
        self._logger_levels = LoggerLevels()
        self.herder = _herder_for(config, self._runtime, self._plugins, self._logger_levels)
        self._stop = asyncio.Event()

    def request_stop(self) -> None:
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    async def run(self) -> None:
        sock = bind_rest_socket(self.config.rest_host_name, self.config.rest_port)
        for stale in await asyncio.to_thread(remove_stale_temp_spaces, self.config.data_dir):
            log.info("removed %s, the temp space of a worker that did not stop cleanly", stale)
        await self.herder.start()
        app = create_app(
            self.herder,
            lambda: self.herder.cluster_id,
            source_commit(),
            self._plugins,
            self._logger_levels,
            self._rest_security,
            self._runtime,
        )
        server = _Server(
            uvicorn.Config(
                app,
                log_level="warning",
                lifespan="off",
                timeout_keep_alive=REST_KEEP_ALIVE_S,
                ssl_certfile=self._rest_security.certfile,
                ssl_keyfile=self._rest_security.keyfile,
            )
        )
        serving = asyncio.create_task(server.serve(sockets=[sock]), name="rest")
        herding = asyncio.create_task(self.herder.wait_closed(), name="herder-loop")
        stopping = asyncio.create_task(self._stop.wait(), name="stop-request")
        log.info("worker %s serving REST on %s", self.config.worker_id, self.config.rest_url)
        try:
            await asyncio.wait({serving, herding, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if self._stop.is_set():
                await self._hand_off()
            log.info("stopping: tasks first, then the group, then REST")
            marks = [time.monotonic()]
            await self.herder.stop()
            # The runtime's monitor may be in a py4j call that, were Spark stopped under it,
            # answers 35-45 s later and holds the exit: its last look ends first.
            await self._runtime.stop_all()
            marks.append(time.monotonic())
            server.should_exit = True
            await asyncio.gather(serving, return_exceptions=True)
            marks.append(time.monotonic())
            await asyncio.to_thread(self._spark.stop)
            marks.append(time.monotonic())
            herder_s, rest_s, spark_s = (b - a for a, b in itertools.pairwise(marks))
            log.info(
                "stopped: tasks and group %.1f s, REST %.1f s, Spark %.1f s",
                herder_s,
                rest_s,
                spark_s,
            )
        for task in (herding, serving):
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    async def _hand_off(self) -> None:
        """A planned stop hands this worker's work to the others before anything stops.

        The worker announces that it is leaving; the leader revokes all its work at once
        and gives it to the other members in the next round, which start it at once
        (warm workers start a task in well under a second). The tasks are stopped the
        usual way, the batch in flight completing. Without a hand-off they would stay
        stopped until this worker is back and warm, or `scheduled.rebalance.max.delay.ms`
        passes. A worker that led its last round alone has nobody to give its work to: it
        skips the round that would only revoke it (6 s on Tansu for `make run`'s Ctrl-C)
        and stops its work as it would anyway; so does a worker in a group whose protocol
        has no `leaving` flag (eager, v1), where it waited out the whole timeout before.
        """
        timeout_s = self.config.task_handoff_timeout_ms / 1000
        if timeout_s <= 0 or not self.herder.ready or self.herder.owned.is_empty():
            return
        refusal = self.herder.hand_off_refusal()
        if refusal is not None:
            log.info("%s: stopping them without a hand-off", refusal)
            return
        log.info(
            "handing %d tasks over to the other workers before stopping (at most %g s)",
            len(self.herder.owned.tasks),
            timeout_s,
        )
        began = time.monotonic()
        if await self.herder.leave_for_good(timeout_s):
            log.info("handed every task over in %.1f s", time.monotonic() - began)
        else:
            log.warning(
                "the hand-off did not finish within task.handoff.timeout.ms; stopping anyway"
            )


def _herder_for(
    config: WorkerConfig,
    runtime: SparkTaskRuntime,
    plugins: RegistryPlugins,
    logger_levels: LoggerLevels,
) -> DistributedHerder:
    security = config.kafka_security()
    servers = config.bootstrap_servers
    topics = [
        config.config_storage_topic,
        config.status_storage_topic,
        config.offset_storage_topic,
    ]
    return DistributedHerder(
        HerderSettings(
            worker_id=config.worker_id,
            rest_url=config.rest_url,
            connect_protocol=config.connect_protocol,
            scheduled_rebalance_max_delay_ms=config.scheduled_rebalance_max_delay_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            group_instance_id=config.group_instance_id,
            checkpoint_root=config.checkpoint_root,
            warm_up=config.worker_warmup_enabled,
        ),
        GroupMember(
            servers,
            config.group_id,
            PROTOCOL_NAME,
            session_timeout_ms=config.session_timeout_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            instance_id=config.group_instance_id,
            security=security,
        ),
        ConfigStore(
            partial(KafkaLog, servers, config.config_storage_topic, security=security),
            StoredConfigVet(plugins),
        ),
        StatusStore(partial(KafkaLog, servers, config.status_storage_topic, security=security)),
        runtime,
        plugins,
        prepare_topics=partial(ensure_compacted_topics, servers, topics, security),
        auto_restart=restart_policy(config),
        set_logger_level=logger_levels.set_level,
        load=lambda: driver_load(runtime.trigger_lags(), runtime.progress()),
    )


class Stoppable(Protocol):
    @property
    def stop_requested(self) -> bool: ...

    def request_stop(self) -> None: ...


def install_stop_signals(service: Stoppable) -> None:
    """The first SIGTERM or SIGINT stops the worker in order (hand-off, tasks, group,
    REST, Spark); a second one exits at once, leaving the tasks to their checkpoints."""
    loop = asyncio.get_running_loop()

    def on_signal(sig: signal.Signals) -> None:
        if not service.stop_requested:
            log.info("%s: stopping (a second signal exits at once)", sig.name)
            service.request_stop()
            return
        log.warning("second %s: exiting now, without stopping the tasks in order", sig.name)
        logging.shutdown()
        os._exit(128 + sig)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
