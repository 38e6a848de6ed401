"""The cluster operations behind the REST API: reading and writing connector configs,
target states, restart requests, log levels and task offsets.

REST calls this class directly; a new operation is a method here, a route and a `ctl`
command. Writes are the leader's (`require_leader` raises `NotLeader` elsewhere, and
REST forwards). A write marked `@queued` runs through the herder's request queue, in
batches: each write of a batch checks in turn against the config as the writes before it
left it (`ConfigStore.planned`) and stages its records (and, for a started connector,
its task configs); then the batch's records are made durable together, and each write
answers once its own are acknowledged and read back, not once the rebalance and the task
starts they cause are done. A write computes only its own connector's task configs: the
leader's next round reconciles them all; a plugin that does not give them within a few
seconds (it may ask an address that never answers) is not waited for longer: the write
goes on without them (`herder.stores.task_configs.ANSWER_WAIT_S`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from functools import partial
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from herder.errors import (
    ConnectorExists,
    ConnectorNotFound,
    ConnectorNotStopped,
    InvalidConnectorConfig,
    InvalidOffsets,
    TaskNotFound,
    TasksStillRunning,
)
from herder.requests import SubmitRequest
from herder.runtime import ConnectorPlugins, TaskOffsets
from herder.stores.config_records import (
    ConfigSnapshot,
    RestartRequest,
    TargetState,
    connector_records,
    deletion_records,
    restart_records,
    target_state_records,
)
from herder.stores.config_store import ConfigStore
from herder.stores.status_store import Status, StatusStore
from herder.stores.task_configs import TaskConfigWriter
from herder.views import ConnectorView
from protocol.messages import ConnectorTaskId
from worker.config.bounds import ConfigTooLarge, check_config_bounds
from worker.plugins.task_state import TaskState
from worker.runtime.task_offsets import (
    OffsetEntry,
    OffsetsError,
    SourceOffset,
    initial_offsets,
)

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")
_A = TypeVar("_A")


class Later(Generic[_R]):
    """A write's answer once `finish` is done: its turn in the request lane has ended
    (its records are sent), and its caller waits for them outside the lane."""

    def __init__(self, finish: Callable[[], Awaitable[_R]]) -> None:
        self.finish = finish


def queued(
    write: Callable[Concatenate[ClusterAdmin, _P], Awaitable[Later[_R]]],
) -> Callable[Concatenate[ClusterAdmin, _P], Coroutine[Any, Any, _R]]:
    """A write that runs in the group loop's turn (`RequestQueue`), not in its caller's,
    and answers once its `Later` is done."""

    async def in_turn(admin: ClusterAdmin, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        answer = await admin._submit(partial(write, admin, *args, **kwargs))
        return await answer.finish()

    return in_turn


class ClusterAdmin:
    """`offsets` are the tasks' own (the runtime's); `submit` runs a write in the group
    loop (`RequestQueue.submit`)."""

    def __init__(
        self,
        configs: ConfigStore,
        statuses: StatusStore,
        plugins: ConnectorPlugins,
        task_configs: TaskConfigWriter,
        offsets: TaskOffsets,
        require_leader: Callable[[], None],
        submit: SubmitRequest,
    ) -> None:
        self._configs = configs
        self._statuses = statuses
        self._plugins = plugins
        self._task_configs = task_configs
        self._offsets = offsets
        self._require_leader = require_leader
        self._submit = submit

    # -- reads: any worker, from its replica of the topics ---------------------------------

    def connector_names(self) -> list[str]:
        return sorted(self._configs.snapshot().connectors)

    def connector(self, name: str) -> ConnectorView:
        return self._view(self._configs.snapshot(), name)

    def _view(self, snapshot: ConfigSnapshot, name: str) -> ConnectorView:
        config = snapshot.connectors.get(name)
        if config is None:
            raise ConnectorNotFound(name)
        try:
            kind = self._plugins.connector_type(config)
        except ValueError:
            kind = "unknown"
        count = len(snapshot.tasks_of(name))
        return ConnectorView(
            name=name,
            config=config,
            tasks=tuple(ConnectorTaskId(name, i) for i in range(count)),
            type=kind,
        )

    def task_configs(self, name: str) -> list[tuple[ConnectorTaskId, Mapping[str, str]]]:
        snapshot = self._configs.snapshot()
        if name not in snapshot.connectors:
            raise ConnectorNotFound(name)
        return [(ConnectorTaskId(name, i), c) for i, c in enumerate(snapshot.tasks_of(name))]

    def connector_status(self, name: str) -> Status | None:
        return self._statuses.connector(name)

    def task_status(self, task: ConnectorTaskId) -> Status | None:
        """The task's last status; raises unless the connector currently has that task."""
        if task.task not in range(len(self.connector(task.connector).tasks)):
            raise TaskNotFound(task)
        return self._statuses.task(task)

    def stopping_tasks(self, name: str) -> dict[ConnectorTaskId, Status]:
        """Tasks the connector no longer has (it was STOPPED, or has fewer tasks) whose
        last status says they still run: their stop waits for a rebalance, and until it
        has come they are shown, and the connector's offsets stay closed."""
        current = len(self.connector(name).tasks)
        return {
            ConnectorTaskId(name, task): status
            for task, status in sorted(self._statuses.tasks_of(name).items())
            if task >= current and status.state in (TaskState.RUNNING, TaskState.RESTARTING)
        }

    async def connector_offsets(self, name: str) -> list[SourceOffset]:
        """What each task says it has committed (KIP-875's GET offsets)."""
        if name not in self._configs.snapshot().connectors:
            raise ConnectorNotFound(name)
        return await self._offsets.committed_offsets(name)

    # -- writes: the leader's, in batches ------------------------------------------------

    @queued
    async def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState = TargetState.STARTED,
        offsets: Sequence[OffsetEntry] | None = None,
    ) -> Later[ConnectorView]:
        """With `offsets` (KIP-995's `initial_offsets`), the tasks start from them: they
        are checked with the config, before anything is written, and put in place
        (`TaskOffsets.seed_offsets`) before the config, so no task starts without them."""
        await self._leader_caught_up()
        if name in self._configs.planned().connectors:
            raise ConnectorExists(name)
        return await self._write_config(name, config, initial_state, offsets)

    @queued
    async def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> Later[tuple[bool, ConnectorView]]:
        """Create or replace a connector's config; whether it was created."""
        await self._leader_caught_up()
        created = name not in self._configs.planned().connectors
        written = await self._write_config(name, config, TargetState.STARTED if created else None)
        return Later(lambda: self._with(created, written))

    @queued
    async def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None]
    ) -> Later[ConnectorView]:
        """Merge `patch` into the config; a None value removes that key (KIP-477).

        REST bounded the patch, not the merge: patches within the bounds could still grow
        a config past them, one write at a time.
        """
        await self._leader_caught_up()
        current = self._configs.planned().connectors.get(name)
        if current is None:
            raise ConnectorNotFound(name)
        merged = {key: value for key, value in {**current, **patch}.items() if value is not None}
        try:
            check_config_bounds(merged)
        except ConfigTooLarge as exc:
            raise InvalidConnectorConfig(str(exc)) from exc
        return await self._write_config(name, merged, None)

    async def _write_config(
        self,
        name: str,
        config: Mapping[str, str],
        target_state: TargetState | None,
        offsets: Sequence[OffsetEntry] | None = None,
    ) -> Later[ConnectorView]:
        if config.get("name", name) != name:
            raise InvalidConnectorConfig(
                f"Connector name configuration ({config['name']}) doesn't match connector "
                f"name in the URL ({name})"
            )
        full = {**config, "name": name}
        planned = self._configs.planned()
        others = {n: c for n, c in planned.connectors.items() if n != name}
        state = target_state or planned.target_state(name)
        try:
            await asyncio.to_thread(
                self._plugins.admit, full, others, will_run=state is not TargetState.STOPPED
            )
            records = connector_records(name, full, target_state)
            planned = self._configs.planned(*records)
            records += await self._task_configs.records(name, planned, refuse=True)
        except ValueError as exc:
            raise InvalidConnectorConfig(str(exc)) from exc
        undo = None
        if offsets is not None:
            await self._seed(name, full, offsets)
            undo = partial(self._unseed, name)
        durable = await self._configs.stage(records)
        return self._once_durable(durable, self._view(self._configs.planned(), name), undo)

    async def _seed(
        self, name: str, config: Mapping[str, str], offsets: Sequence[OffsetEntry]
    ) -> None:
        """`offsets` checked against the connector `config` makes, then in place."""
        if not self._plugins.takes_initial_offsets(config):
            raise InvalidOffsets(
                f"initial_offsets: {config.get('connector.class')} cannot start from offsets "
                "given at create (its offsets are bound to files Spark keeps beside them); "
                "create it without them"
            )
        try:
            seed = initial_offsets(offsets, self._plugins.connector_type(config), config)
            await self._offsets.seed_offsets(name, seed)
        except OffsetsError as exc:
            raise InvalidOffsets(str(exc)) from exc
        log.info("connector %s starts from its initial offsets: %s", name, seed)

    async def _unseed(self, name: str) -> None:
        """A create whose records were refused leaves no offsets a later connector of
        that name would start from (the name had none before: `seed_offsets`)."""
        log.warning("connector %s was not created; its initial offsets are removed", name)
        await self._offsets.reset_offsets(name)

    @queued
    async def set_target_state(self, name: str, state: TargetState) -> Later[None]:
        """Pause, resume or stop a connector: every worker follows the config topic."""
        await self._existing(name)
        records = target_state_records(name, state)
        records += await self._task_configs.records(name, self._configs.planned(*records))
        return self._once_durable(await self._configs.stage(records), None)

    @queued
    async def restart(self, request: RestartRequest) -> Later[None]:
        """Record a restart; the workers that run the work carry it out."""
        await self._leader_caught_up()
        if request.task is not None:
            self._task_of_planned(ConnectorTaskId(request.connector, request.task))
        elif request.connector not in self._configs.planned().connectors:
            raise ConnectorNotFound(request.connector)
        return self._once_durable(await self._configs.stage(restart_records(request)), None)

    @queued
    async def delete_connector(self, name: str) -> Later[None]:
        await self._existing(name)
        task_count = len(self._configs.planned().task_configs.get(name, ()))
        durable = await self._configs.stage(deletion_records(name))
        await self._statuses.delete_connector(name, task_count)
        return self._once_durable(durable, None)

    def _once_durable(
        self,
        durable: asyncio.Task[None],
        answer: _A,
        undo: Callable[[], Awaitable[None]] | None = None,
    ) -> Later[_A]:
        """`answer`, once every record staged so far is acknowledged and read back, and
        the write's own (`durable`) were not refused; `undo` runs if they were."""

        async def finish() -> _A:
            try:
                await self._configs.flush()
                await asyncio.shield(durable)
            except Exception:
                refused = durable.done() and not durable.cancelled() and durable.exception()
                if undo is not None and refused:
                    await undo()
                raise
            return answer

        return Later(finish)

    @staticmethod
    async def _with(created: bool, written: Later[ConnectorView]) -> tuple[bool, ConnectorView]:
        return created, await written.finish()

    @queued
    async def alter_connector_offsets(
        self, name: str, offsets: Mapping[int, Mapping[int, object | None]]
    ) -> Later[None]:
        """`offsets[task][source]`: the end offset to resume after; a task given only None
        offsets is reset. Refused unless the connector is STOPPED and none of its tasks
        still reports RUNNING."""
        await self._require_stopped(name)
        try:
            await self._offsets.alter_offsets(name, offsets)
        except OffsetsError as exc:
            raise InvalidOffsets(str(exc)) from exc
        for task, by_source in sorted(offsets.items()):
            log.info("altered the offsets of %s task %d: %s", name, task, dict(by_source))
        return _answered(None)

    @queued
    async def reset_connector_offsets(self, name: str) -> Later[None]:
        await self._require_stopped(name)
        await self._offsets.reset_offsets(name)
        log.info("reset the offsets of %s: its tasks start from their sources' beginning", name)
        return _answered(None)

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """Any worker may write this record; every worker, this one included, applies it
        when it reads it. Levels set this way do not survive a restart, as in Connect."""
        await self._configs.put_logger_level(namespace, level)
        await self._configs.read_to_end()

    async def _leader_caught_up(self) -> None:
        """Once per batch (`ConfigStore.catch_up`): the leader is the config's only writer."""
        self._require_leader()
        await self._configs.catch_up()

    async def _existing(self, name: str) -> None:
        await self._leader_caught_up()
        if name not in self._configs.planned().connectors:
            raise ConnectorNotFound(name)

    def _task_of_planned(self, task: ConnectorTaskId) -> None:
        if task.task not in range(len(self._view(self._configs.planned(), task.connector).tasks)):
            raise TaskNotFound(task)

    async def _require_stopped(self, name: str) -> None:
        await self._existing(name)
        if self._configs.planned().target_state(name) is not TargetState.STOPPED:
            raise ConnectorNotStopped(name)
        await self._statuses.read_to_end()
        if running := [task.task for task in self.stopping_tasks(name)]:
            raise TasksStillRunning(name, running)


def _answered(answer: _R) -> Later[_R]:
    """A write done within its turn (the tasks' offsets are not on the config topic)."""

    async def finish() -> _R:
        return answer

    return Later(finish)
