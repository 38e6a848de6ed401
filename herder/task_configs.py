"""The leader turns connector configs into task configs, so one writer decides every
connector's task set (as in Kafka Connect)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping

from herder.config_records import ConfigRecord, ConfigSnapshot, TargetState, task_config_records
from herder.config_store import ConfigStore
from herder.runtime import ConnectorPlugins

log = logging.getLogger(__name__)


class TaskConfigWriter:
    """Leader only: keeps each started connector's committed task configs current.

    A plugin is asked again when its connector's config or committed task configs are
    not what it last answered for, or its `task_configs_refresh_ms` is due; not at every
    config change of any connector: with many connectors, asking each one (a thread
    each) at every write made a burst of writes quadratic.
    """

    def __init__(
        self, configs: ConfigStore, plugins: ConnectorPlugins, clock: Callable[[], float]
    ) -> None:
        self._configs = configs
        self._plugins = plugins
        self._clock = clock
        self._refreshed_at: dict[str, float] = {}
        self._asked: dict[str, tuple[dict[str, str], list[dict[str, str]]]] = {}
        """Per connector: the config its plugin was last asked about, and its answer."""

    async def reconcile(self, only: Collection[str] | None = None, *, ask: bool = False) -> None:
        """Make every started connector's (or `only` those connectors') task configs
        current; `ask` asks each plugin again even if its config has not changed."""
        snapshot = self._configs.snapshot()
        for name in snapshot.connectors:
            if only is None or name in only:
                records = await self._records(name, snapshot, ask=ask)
                if records:
                    await self._configs.write(records)

    async def records(self, name: str, planned: ConfigSnapshot) -> list[ConfigRecord]:
        """The records that make `name`'s task configs what `planned` asks for, if any:
        a write of the request lane stages them with its own (`ConfigStore.stage`), in
        one go, so the loop never reads its connector without its task configs."""
        return await self._records(name, planned, ask=False)

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
            await self.reconcile(only=due, ask=True)

    async def _records(
        self, name: str, snapshot: ConfigSnapshot, *, ask: bool
    ) -> list[ConfigRecord]:
        """The records that make `name`'s task configs what its plugin wants, if they
        differ from the committed ones. The plugin is not asked again while the config it
        answered for and its answer are what the snapshot holds."""
        config = snapshot.connectors.get(name)
        if config is None or snapshot.target_state(name) is TargetState.STOPPED:
            return []
        committed = list(snapshot.task_configs.get(name, ()))
        if not ask and self._asked.get(name) == (config, committed):
            return []
        wanted = await self._wanted(name, config)
        if wanted is None or committed == wanted:
            return []
        log.info("connector %s: task configs changed; %d tasks now", name, len(wanted))
        return task_config_records(name, wanted)

    async def _wanted(self, name: str, config: Mapping[str, str]) -> list[dict[str, str]] | None:
        """A plugin may look at the outside world to split its work, so it is asked off
        the event loop; None if it failed."""
        self._refreshed_at[name] = self._clock()
        try:
            wanted = await asyncio.to_thread(self._plugins.task_configs, config)
        except Exception as exc:
            log.error("connector %s: cannot compute task configs: %s", name, exc)
            return None
        self._asked[name] = (dict(config), wanted)
        return wanted
