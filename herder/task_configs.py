"""The leader turns connector configs into task configs, so one writer decides every
connector's task set (as in Kafka Connect)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection

from herder.config_store import ConfigStore, TargetState
from herder.runtime import ConnectorPlugins

log = logging.getLogger(__name__)


class TaskConfigWriter:
    """Leader only: keeps each started connector's committed task configs current."""

    def __init__(
        self, configs: ConfigStore, plugins: ConnectorPlugins, clock: Callable[[], float]
    ) -> None:
        self._configs = configs
        self._plugins = plugins
        self._clock = clock
        self._refreshed_at: dict[str, float] = {}

    async def reconcile(self, only: Collection[str] | None = None) -> None:
        """Make every started connector's (or `only` those connectors') task configs
        current. A plugin may look at the outside world to split its work, so it is asked
        off the event loop."""
        snapshot = self._configs.snapshot()
        for name, config in snapshot.connectors.items():
            if snapshot.target_state(name) is TargetState.STOPPED:
                continue
            if only is not None and name not in only:
                continue
            self._refreshed_at[name] = self._clock()
            try:
                wanted = await asyncio.to_thread(self._plugins.task_configs, config)
            except Exception as exc:
                log.error("connector %s: cannot compute task configs: %s", name, exc)
                continue
            if list(snapshot.task_configs.get(name, ())) != wanted:
                log.info("connector %s: task configs changed; %d tasks now", name, len(wanted))
                await self._configs.put_task_configs(name, wanted)

    async def refresh_due(self) -> None:
        """Reconcile the connectors whose `task_configs_refresh_ms` is due."""
        now = self._clock()
        due = []
        for name, config in self._configs.snapshot().connectors.items():
            try:
                interval = self._plugins.task_configs_refresh_s(config)
            except ValueError:
                continue
            if interval is not None and now >= self._refreshed_at.get(name, 0.0) + interval:
                due.append(name)
        if due:
            await self.reconcile(only=due)
