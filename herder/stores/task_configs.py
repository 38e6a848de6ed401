"""The leader turns connector configs into task configs, so one writer decides every
connector's task set (as in Kafka Connect)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from herder.runtime import ConnectorPlugins
from herder.stores.config_records import (
    ConfigRecord,
    ConfigSnapshot,
    TargetState,
    task_config_records,
)
from herder.stores.config_store import ConfigStore

log = logging.getLogger(__name__)

ANSWER_WAIT_S: Final = 5.0
"""How long a write in the request lane, or a step of the group loop, waits for a plugin's
task configs. A plugin may ask the outside world (a Kafka sink lists its topics'
partitions), and an address a REST caller names may never answer: a create then held the
request lane for a minute, every other write behind it. Past this, the write or step goes
on without them, and the plugin's answer, whenever it comes, is used the next time the
connector's task configs are reconciled."""
PLUGIN_THREADS: Final = 4
"""Threads that ask plugins, apart from the event loop's default executor, so that
plugins waiting on addresses that never answer cannot hold the threads every other
blocking call of the herder needs."""


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
        self._asking: dict[str, tuple[dict[str, str], asyncio.Future[list[dict[str, str]]]]] = {}
        """Per connector: a question to its plugin whose answer nobody has taken yet (one
        not answered within `ANSWER_WAIT_S`): asked again, the plugin is not asked twice."""
        self._threads = ThreadPoolExecutor(PLUGIN_THREADS, thread_name_prefix="task-configs")

    async def reconcile(self, only: Collection[str] | None = None, *, ask: bool = False) -> None:
        """Make every started connector's (or `only` those connectors') task configs
        current; `ask` asks each plugin again even if its config has not changed."""
        snapshot = self._configs.snapshot()
        for name in snapshot.connectors:
            if only is None or name in only:
                records = await self._records(name, snapshot, ask=ask)
                if records:
                    await self._configs.write(records)

    async def records(
        self, name: str, planned: ConfigSnapshot, *, refuse: bool = False
    ) -> list[ConfigRecord]:
        """The records that make `name`'s task configs what `planned` asks for, if any:
        a write of the request lane stages them with its own (`ConfigStore.stage`), in
        one go, so the loop never reads its connector without its task configs (unless
        its plugin does not answer in time). With `refuse`, the plugin's `ValueError`
        (task configs too large for the config topic, say) is raised, for a STOPPED
        connector too, whose task configs are not written: a config whose tasks could
        never be stored is refused when it is written, not when it is resumed."""
        config = planned.connectors.get(name)
        if refuse and config is not None and planned.target_state(name) is TargetState.STOPPED:
            await self._wanted(name, config, refuse=True)
            return []
        return await self._records(name, planned, ask=False, refuse=refuse)

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
        self, name: str, snapshot: ConfigSnapshot, *, ask: bool, refuse: bool = False
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
        wanted = await self._wanted(name, config, refuse=refuse)
        if wanted is None or committed == wanted:
            return []
        log.info("connector %s: task configs changed; %d tasks now", name, len(wanted))
        return task_config_records(name, wanted)

    async def _wanted(
        self, name: str, config: Mapping[str, str], *, refuse: bool
    ) -> list[dict[str, str]] | None:
        """A plugin may look at the outside world to split its work, so it is asked off
        the event loop, and waited for `ANSWER_WAIT_S` at most; None if it failed or did
        not answer in time. With `refuse`, its `ValueError` is raised."""
        self._refreshed_at[name] = self._clock()
        asking = self._asking.get(name)
        if asking is None or asking[0] != config:
            question = asyncio.get_running_loop().run_in_executor(
                self._threads, self._plugins.task_configs, config
            )
            question.add_done_callback(lambda done: done.cancelled() or done.exception())
            asking = self._asking[name] = (dict(config), question)
        try:
            wanted = await asyncio.wait_for(asyncio.shield(asking[1]), ANSWER_WAIT_S)
        except TimeoutError:
            log.warning(
                "connector %s: its plugin gave no task configs within %g s (it may be waiting "
                "for an address that does not answer); they are reconciled once it does",
                name,
                ANSWER_WAIT_S,
            )
            return None
        except Exception as exc:
            if refuse and isinstance(exc, ValueError):
                raise
            log.error("connector %s: cannot compute task configs: %s", name, exc)
            return None
        finally:
            if asking[1].done() and self._asking.get(name) is asking:
                del self._asking[name]
        self._asked[name] = (dict(config), wanted)
        return wanted
