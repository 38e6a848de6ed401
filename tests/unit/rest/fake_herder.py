"""A herder for REST unit tests: one worker that leads, no Kafka, no Spark.

Its cluster operations are the real `ClusterAdmin` (`herder.admin.cluster_admin`) over
the real stores on in-memory topics (`tests.unit.herder.memory_cluster`), so a test sees
what the herder itself refuses and the status code and error body the app makes of it; only the
worker's own state (health, views, metrics, leaving) is set by the test. Writes run at
once rather than in a group loop's turn: there is none.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from herder.admin.cluster_admin import ClusterAdmin
from herder.errors import HerderError, NoHandOff, NotLeader
from herder.metrics import RebalanceView, WorkerMetrics
from herder.stores.config_records import RestartRequest, TargetState
from herder.stores.config_store import ConfigStore
from herder.stores.status_store import Status, StatusStore
from herder.stores.task_configs import TaskConfigWriter
from herder.views import ClusterView, WorkerState
from protocol.messages import EMPTY_ALLOCATION, Allocation, ConnectorTaskId
from tests.unit.herder.memory_cluster import CountingPlugins, MemoryLog, RecordingRuntime
from worker.plugins.task_state import StartupCounts, TaskState
from worker.runtime.task_offsets import SourceOffset

WORKER_ID = "10.0.0.1:8083"

_Result = TypeVar("_Result")


class FakePlugins(CountingPlugins):
    """Any config with a `connector.class` passes; each task config is the connector's
    with its `task.id`; a config with `topics` is a sink's."""

    def validate(self, config: Mapping[str, str]) -> None:
        if "connector.class" not in config:
            raise ValueError('Missing required configuration "connector.class"')

    def task_configs(self, config: Mapping[str, str]) -> list[dict[str, str]]:
        return [{**config, "task.id": str(i)} for i in range(int(config.get("tasks.max", "1")))]

    def connector_type(self, config: Mapping[str, str]) -> str:
        """A sink when it names the topics it reads, as Connect's sinks do."""
        return "sink" if "topics" in config else "source"


def _run(step: Coroutine[Any, Any, object]) -> None:
    """A write a test makes before its request, outside the app's loop."""
    asyncio.run(step)


@dataclass
class FakeHerder:
    worker_id: str = WORKER_ID
    ready: bool = True
    state: WorkerState = WorkerState.RUNNING
    unhealthy: str | None = None
    owned: Allocation = EMPTY_ALLOCATION
    leads: bool = True
    leader_url: str | None = None
    handed_over: bool = True
    """What `leave_for_good` answers."""
    hand_off_refusal: str | None = None
    """Why `leave_for_good` raises `NoHandOff`, if it does."""
    leave_timeouts: list[float] = field(default_factory=list)
    runtime: RecordingRuntime = field(default_factory=RecordingRuntime)
    """Whose offsets the admin reads and writes."""
    refusal: HerderError | None = None
    """What every write is refused with before it runs, if set, as the request queue of
    a worker that cannot serve it in time or is stopping refuses it."""
    _restarts: list[RestartRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._configs = ConfigStore(MemoryLog)
        self._statuses = StatusStore(MemoryLog)
        plugins = FakePlugins()
        self.admin = ClusterAdmin(
            self._configs,
            self._statuses,
            plugins,
            TaskConfigWriter(self._configs, plugins, time.time),
            self.runtime,
            self._require_leader,
            self._run_at_once,
        )

    # -- what a test sets up or looks at --------------------------------------------------

    def add(
        self,
        name: str,
        tasks: int = 1,
        target: TargetState = TargetState.STARTED,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        """A connector that exists before the test's request, with `tasks` tasks."""
        config = {"connector.class": "generator", "tasks.max": str(tasks), **(extra or {})}
        _run(self.admin.create_connector(name, config, target))

    def report(
        self, work: str | ConnectorTaskId, state: TaskState, trace: str | None = None
    ) -> None:
        """A status as the worker running `work` would write it."""
        _run(self._put_status(work, Status(state, WORKER_ID, generation=1, trace=trace)))

    async def _put_status(self, work: str | ConnectorTaskId, status: Status) -> None:
        if isinstance(work, str):
            await self._statuses.put_connector(work, status)
        else:
            await self._statuses.put_task(work, status)
        await self._statuses.read_to_end()

    @property
    def configs(self) -> dict[str, Mapping[str, str]]:
        return dict(self._configs.snapshot().connectors)

    @property
    def targets(self) -> dict[str, TargetState]:
        snapshot = self._configs.snapshot()
        return {name: snapshot.target_state(name) for name in snapshot.connectors}

    @property
    def restarts(self) -> list[RestartRequest]:
        """Every restart request written so far."""
        self._restarts.extend(self._configs.take_restart_requests())
        return list(self._restarts)

    @property
    def offsets(self) -> dict[str, list[SourceOffset]]:
        return self.runtime.offsets

    @property
    def altered(self) -> list[tuple[str, Mapping[int, Mapping[int, object | None]]]]:
        return self.runtime.altered

    @property
    def reset(self) -> list[str]:
        return self.runtime.reset

    # -- what REST asks of the worker itself -----------------------------------------------

    def cluster_view(self) -> ClusterView:
        return ClusterView(
            leader_url=self.leader_url,
            generation=3,
            protocol_version=2,
            scheduled_rebalance_ms=0,
            workers={self.worker_id: self.owned},
            state=self.state,
        )

    def metrics(self) -> WorkerMetrics:
        def state(status: Status | None) -> str:
            return status.state.value.lower() if status is not None else "unassigned"

        return WorkerMetrics(
            state=self.state,
            generation=3,
            protocol_version=2,
            scheduled_rebalance_ms=0,
            connectors={c: state(self._statuses.connector(c)) for c in self.owned.connectors},
            tasks={t: state(self._statuses.task(t)) for t in self.owned.tasks},
            rebalance=RebalanceView(
                completed=2,
                rebalancing=False,
                avg_time_ms=150.0,
                max_time_ms=200.0,
                time_since_last_ms=5_000.0,
            ),
            connector_startups=StartupCounts(attempts=1, successes=1),
            hand_offs=0,
            self_fencings=0,
            failed_rounds=0,
            auto_restarts=3,
            refused_config_records=2,
        )

    async def leave_for_good(self, timeout_s: float) -> bool:
        self.leave_timeouts.append(timeout_s)
        if self.hand_off_refusal is not None:
            raise NoHandOff(self.hand_off_refusal)
        return self.handed_over

    async def _run_at_once(self, request: Callable[[], Awaitable[_Result]]) -> _Result:
        if self.refusal is not None:
            raise self.refusal
        return await request()

    def _require_leader(self) -> None:
        if not self.leads:
            raise NotLeader(self.leader_url)
