"""What a worker checks of a connector or task config it reads from the config topic
before it applies it (`herder.stores.config_store.Vet`).

The leader checks a config before it writes it; a record written by anyone else who can
reach the topic has passed no check at all. So every worker judges each config it reads
by the rules that need nothing outside the config: the name rule, the size bounds, the
plugin's own checks and the worker's topics (`RegistryPlugins.problems` without Spark).
Two things are not held against a record, since they say more about this worker than
about the record: a plugin this worker lacks (the others may have it, and a task fails
where it cannot start) and a placeholder it cannot resolve now (a secret file rotated
away; the task that needs it fails as it starts).
"""

from __future__ import annotations

from collections.abc import Mapping

from worker.admission.connector_configs import RegistryPlugins
from worker.admission.registry import CONNECTOR_CLASS, UnknownPluginError
from worker.config.bounds import ConfigTooLarge, check_config_bounds
from worker.config.providers import has_placeholder
from worker.plugins.names import InvalidName, check_name


class StoredConfigVet:
    def __init__(self, plugins: RegistryPlugins) -> None:
        self._plugins = plugins

    def connector(self, name: str, config: Mapping[str, str]) -> str | None:
        try:
            check_name(name)
            check_config_bounds(config)
        except (InvalidName, ConfigTooLarge) as exc:
            return str(exc)
        if not config.get(CONNECTOR_CLASS, "").strip():
            return f"no {CONNECTOR_CLASS}"
        return self._plugin_problems(config)

    def task(self, name: str, config: Mapping[str, str]) -> str | None:
        """A task config may be larger than a connector's (a long partition list) and,
        from a plugin of another author, need not repeat `connector.class`."""
        try:
            check_name(name)
        except InvalidName as exc:
            return str(exc)
        return self._plugin_problems(config)

    def _plugin_problems(self, config: Mapping[str, str]) -> str | None:
        try:
            connector = self._plugins.registry.resolve(config.get(CONNECTOR_CLASS, ""))
        except UnknownPluginError:
            return None
        problems = [
            problem
            for problem in self._plugins.problems(connector, config, spark=False)
            if not has_placeholder(config.get(problem.key, ""))
        ]
        return "; ".join(str(problem) for problem in problems) or None
