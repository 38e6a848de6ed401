"""Connector configs through the installed plugins: every check a config passes before the
leader stores it, the resolved config a task starts with, and the task configs as stored.
`RegistryPlugins` is the herder's view of the plugins (`herder.runtime.ConnectorPlugins`).

A stored config keeps its `${provider:...}` placeholders: plugins only ever see the
resolved values, and what they hand back for the config topic has the placeholders put
back (Kafka Connect's reverse transform), so a secret never lands in a record.

The worker's Kafka security settings (`consumer.*` for sink connectors, which consume,
`producer.*` for source connectors) reach a plugin the same way: as `kafka.*` defaults
in the resolved config that its own `kafka.*` settings override, never stored. So do the
worker's converters (`key.converter`, `value.converter` and their settings), by
Connect's rule (`worker.records.converters.spec.inherit_converters`), and the names of
the worker's own topics, which no connector may touch (`worker.plugins.internal_topics`):
the worker's value of that one wins over a connector's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from worker.admission.checkpoint_fit import checkpoint_fingerprint, unfit_checkpoints
from worker.admission.registry import (
    CONNECTOR_CLASS,
    FrameworkSettings,
    PluginRegistry,
    UnknownPluginError,
    ValidatedConnector,
    validate_connector_config,
)
from worker.admission.stored_task_configs import stored_task_configs
from worker.config.providers import ConfigProviderError, ConfigProviders, has_placeholder, hide
from worker.kafka.connection import CLIENT_FILE_KEYS, same_cluster
from worker.kafka.connection import CONNECTOR_PREFIX as CONNECTOR_KAFKA_PREFIX
from worker.kafka.security import ClientRole, security_settings
from worker.plugins.api import (
    ConfigProblem,
    Connector,
    ConnectorConfigError,
    parse_config,
    secret_keys,
)
from worker.plugins.internal_topics import (
    INTERNAL_TOPICS_KEY,
    internal_topic_problems,
    internal_topics,
)
from worker.plugins.locations import (
    Locations,
    file_problems,
    location_problems,
    placed_locations,
)
from worker.records.converters.spec import inherit_converters

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class TaskConfigsUnavailable(RuntimeError):
    """The plugin could not split its work now (its source unreachable, say); the message
    is the cause's, its secrets hidden."""


class RegistryPlugins:
    """Connector-level operations answered from a `PluginRegistry`.

    A user's error (unknown `connector.class`, an invalid or unresolvable value)
    surfaces as `ValueError`, the one error type the herder turns into a 400.
    `spark` gives the worker's session for the checks only Spark can make; it is asked
    for only when a plugin has such checks.
    """

    def __init__(
        self,
        registry: PluginRegistry,
        *,
        providers: ConfigProviders,
        checkpoint_root: Path,
        tasks_max_limit: int,
        spark: Callable[[], SparkSession],
        cwd: Path | None = None,
        kafka_security: Mapping[str, str] | None = None,
        kafka_bootstrap_servers: str = "",
        allowed_paths: Sequence[str] = (),
        converter_defaults: Mapping[str, str] | None = None,
        internal_topics: Iterable[str] = (),
    ) -> None:
        self._registry = registry
        self._providers = providers
        self._checkpoint_root = checkpoint_root
        self._tasks_max_limit = tasks_max_limit
        self._spark = spark
        self._cwd = cwd or Path.cwd()
        self._kafka_security = dict(kafka_security or {})
        self._kafka_bootstrap_servers = kafka_bootstrap_servers
        self._allowed_paths = tuple(allowed_paths)
        self._converter_defaults = dict(converter_defaults or {})
        self._internal_topics = ",".join(sorted(set(internal_topics)))

    @property
    def registry(self) -> PluginRegistry:
        return self._registry

    def validate(self, config: Mapping[str, str]) -> None:
        """The cheap checks: what a worker repeats when it starts a connector."""
        resolved, validated = self.validated(config)
        self.placed(type(validated.connector), config, resolved)

    def placed(
        self, connector: type[Connector], raw: Mapping[str, str], resolved: Mapping[str, str]
    ) -> dict[str, str]:
        """`resolved` with each location in the normal form the checks judged, the text a
        task hands Spark; refused when a location or a topic breaks a rule that needs no
        other connector (a config stored before the rule was, a symlink changed since, a
        record forged on the config topic)."""
        forms, problems = placed_locations(
            self._locations(connector, resolved),
            self._checkpoint_root,
            self._cwd,
            self._allowed_paths,
        )
        problems += self._topic_problems(connector(), resolved)
        problems += self._client_file_problems(connector(), raw, resolved)
        if problems:
            raise ConnectorConfigError(self._masked(problems, raw))
        return {**resolved, **forms}

    def validated(self, config: Mapping[str, str]) -> tuple[dict[str, str], ValidatedConnector]:
        """The resolved config and its plugin, for a task about to start. A problem with
        a resolved value names its placeholder, never the value."""
        resolved = self.resolve(config)
        try:
            return resolved, validate_connector_config(self._registry, resolved)
        except ConnectorConfigError as exc:
            raise ConnectorConfigError(self._masked(exc.problems, config)) from None
        except UnknownPluginError as exc:
            raise ValueError(str(exc)) from exc

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        try:
            resolved = self._providers.resolve(config)
        except ConfigProviderError as exc:
            raise ValueError(str(exc)) from exc
        return self._with_worker_settings(resolved)

    def _with_worker_settings(self, resolved: Mapping[str, str]) -> dict[str, str]:
        """`resolved` over what it inherits from the worker, under the worker's topics."""
        own = {INTERNAL_TOPICS_KEY: self._internal_topics}
        return {**self._worker_defaults(resolved), **resolved, **own}

    def _worker_defaults(self, resolved: Mapping[str, str]) -> dict[str, str]:
        """What a plugin inherits from the worker: Kafka security, converters, the names
        of the worker's topics."""
        return {
            **self._kafka_defaults(resolved),
            **inherit_converters(self._converter_defaults, resolved),
            INTERNAL_TOPICS_KEY: self._internal_topics,
        }

    def _kafka_defaults(self, resolved: Mapping[str, str]) -> dict[str, str]:
        """The worker's security settings for the plugin's Kafka clients, as `kafka.*`;
        only for a connector of the worker's own cluster, so that no caller can have the
        worker log in to a broker of the caller's choosing."""
        servers = resolved.get(f"{CONNECTOR_KAFKA_PREFIX}bootstrap.servers", "")
        if not self._kafka_security or not same_cluster(servers, self._kafka_bootstrap_servers):
            return {}
        try:
            role: ClientRole = "consumer" if self.connector_type(resolved) == "sink" else "producer"
        except ValueError:
            return {}
        return {
            f"{CONNECTOR_KAFKA_PREFIX}{key}": value
            for key, value in security_settings(self._kafka_security, role).items()
        }

    def problems(
        self, connector: type[Connector], config: Mapping[str, str], *, spark: bool = True
    ) -> list[ConfigProblem]:
        """Everything wrong with `config` for `connector` on its own, by key: unresolvable
        placeholders, the framework's settings, the plugin's, then (with `spark`) the
        plugin's Spark checks, only once the rest passed."""
        problems: list[ConfigProblem] = []
        resolved = dict(config)
        for key, value in config.items():
            if has_placeholder(value):
                try:
                    resolved.update(self._providers.resolve({key: value}))
                except ConfigProviderError as exc:
                    problems.append(ConfigProblem(key, str(exc)))
        resolved = self._with_worker_settings(resolved)
        plugin = connector()
        try:
            framework = parse_config(FrameworkSettings, resolved)
            problems += framework.problems(self._tasks_max_limit, connector)
        except ConnectorConfigError as exc:
            problems.extend(exc.problems)
        try:
            plugin.validate(resolved)
        except ConnectorConfigError as exc:
            problems.extend(exc.problems)
        else:
            problems += self._topic_problems(plugin, resolved)
        if spark and not problems:
            problems = self._spark_problems(connector, resolved)
        return self._masked(problems, config)

    def _spark_problems(
        self, connector: type[Connector], resolved: Mapping[str, str]
    ) -> list[ConfigProblem]:
        """The plugin's Spark checks (blocking: call it off the event loop), asked only of
        a config that passed every other check: they take a SparkSession and a while."""
        plugin = connector()
        if type(plugin).validate_with_spark is Connector.validate_with_spark:
            return []
        try:
            plugin.validate_with_spark(self._with_worker_settings(resolved), self._spark())
        except ConnectorConfigError as exc:
            return list(exc.problems)
        return []

    def admit(
        self,
        config: Mapping[str, str],
        others: Mapping[str, Mapping[str, str]],
        *,
        will_run: bool = True,
    ) -> None:
        """Raise `ValueError` unless `config` may be stored beside the `others` (every
        other connector's config, by name). Blocking: it may ask Spark. A config whose
        tasks' checkpoints were made for other values is refused only if it `will_run`
        (not STOPPED): stopped, the connector's offsets can be reset first, as Connect's
        are (KIP-875, KIP-980). The task configs, which may ask the outside world, are the
        write's to compute, within its bound (`herder.stores.task_configs`)."""
        connector = self._plugin(config)
        problems = self.problems(connector, config, spark=False)
        resolved = self.resolve(config) if not problems else dict(config)
        problems += location_problems(
            self._locations(connector, resolved),
            {name: self._written(other) for name, other in others.items()},
            self._checkpoint_root,
            self._cwd,
            self._allowed_paths,
        )
        if not problems:
            problems += self._client_file_problems(connector(), config, resolved)
        name = config.get("name")
        if not problems:
            problems += self._spark_problems(connector, resolved)
        if not problems and will_run and name:
            made_for = self.checkpoint_fingerprint(resolved)
            problems += unfit_checkpoints(self._checkpoint_root, name, made_for)
        if problems:
            raise ConnectorConfigError(self._masked(problems, config))

    def checkpoint_fingerprint(self, resolved: Mapping[str, str]) -> dict[str, str]:
        """What the tasks' checkpoints of the `resolved` config are bound to."""
        return checkpoint_fingerprint(self._plugin(resolved), resolved, self._cwd)

    def hide(self, text: str, *configs: Mapping[str, str]) -> str:
        """`text` (an error, a trace) with every value a placeholder of `configs`
        resolves to shown as the placeholder: whatever a user or an operator reads."""
        secrets: dict[str, str] = {}
        for config in configs:
            secrets.update(self._providers.secrets(config))
        return hide(text, secrets)

    def _masked(
        self, problems: Iterable[ConfigProblem], config: Mapping[str, str]
    ) -> list[ConfigProblem]:
        secrets = self._providers.secrets(config)
        return [ConfigProblem(p.key, hide(p.message, secrets)) for p in problems]

    def task_configs(self, config: Mapping[str, str]) -> list[dict[str, str]]:
        """The plugin's task configs from the resolved config, with the placeholders put
        back; refused when they would not fit the config topic. Whatever goes wrong, the
        error carries no resolved secret (the herder logs it)."""
        try:
            return self._task_configs(config)
        except ConnectorConfigError as exc:
            raise ConnectorConfigError(self._masked(exc.problems, config)) from None
        except ValueError as exc:
            raise ValueError(self.hide(str(exc), config)) from None
        except Exception as exc:
            cause = f"{type(exc).__name__}: {exc}"
            raise TaskConfigsUnavailable(self.hide(cause, config)) from None

    def _task_configs(self, config: Mapping[str, str]) -> list[dict[str, str]]:
        resolved = self.resolve(config)
        framework = parse_config(FrameworkSettings, resolved)
        connector = self._registry.resolve(framework.connector_class)()
        tasks_max = framework.tasks_max
        inherited = self._worker_defaults(resolved)
        return stored_task_configs(
            connector.task_configs(resolved, tasks_max)[:tasks_max], config, resolved, inherited
        )

    def connector_type(self, config: Mapping[str, str]) -> str:
        return self._plugin(config).connector_type

    def takes_initial_offsets(self, config: Mapping[str, str]) -> bool:
        return self._plugin(config).takes_initial_offsets()

    def task_configs_refresh_s(self, config: Mapping[str, str]) -> float | None:
        """A class attribute: the plugin is looked up, the config not validated (the
        herder asks for every connector each time its loop wakes)."""
        refresh_ms = self._plugin(config).task_configs_refresh_ms
        return None if refresh_ms is None else refresh_ms / 1000

    def secret_keys(self, config: Mapping[str, str]) -> frozenset[str]:
        """The plugin's PASSWORD keys; none for a class this worker does not know."""
        try:
            return secret_keys(self._plugin(config).config_model)
        except ValueError:
            return frozenset()

    def _plugin(self, config: Mapping[str, str]) -> type[Connector]:
        try:
            return self._registry.resolve(config.get(CONNECTOR_CLASS, ""))
        except UnknownPluginError as exc:
            raise ValueError(str(exc)) from exc

    @staticmethod
    def _topic_problems(plugin: Connector, resolved: Mapping[str, str]) -> list[ConfigProblem]:
        """The keys of a config the plugin accepted that name one of the worker's topics."""
        try:
            named = plugin.kafka_topics(resolved)
        except ConnectorConfigError as exc:
            return list(exc.problems)
        return internal_topic_problems(named, internal_topics(resolved))

    def _client_file_problems(
        self, plugin: Connector, raw: Mapping[str, str], resolved: Mapping[str, str]
    ) -> list[ConfigProblem]:
        """The files the config's own settings name for its clients (not those of the
        worker's Kafka login, which it inherits), held to the rules of what it reads."""
        own = {key: [resolved[key]] for key in CLIENT_FILE_KEYS if raw.get(key)}
        files = {**own, **plugin.client_files(resolved)}
        return file_problems(files, self._checkpoint_root, self._cwd, self._allowed_paths)

    def _locations(self, connector: type[Connector], resolved: Mapping[str, str]) -> Locations:
        def pick(keys: tuple[str, ...]) -> dict[str, str]:
            return {key: resolved[key] for key in keys if resolved.get(key)}

        return Locations(
            written=pick(connector.output_path_keys), read=pick(connector.input_path_keys)
        )

    def _written(self, config: Mapping[str, str]) -> list[str]:
        """Where another, already stored connector writes; one this worker cannot read
        (an uninstalled plugin, a secret it cannot resolve) counts as writing nowhere."""
        try:
            return list(
                self._locations(self._plugin(config), self.resolve(config)).written.values()
            )
        except ValueError:
            return []
