"""An in-memory herder for REST unit tests: one worker that leads, no Kafka, no Spark.

It refuses what `DistributedHerder` refuses, with the same `herder.errors`, so a test
sees the status code and error body the app makes of each refusal; and it records what
the routers asked of it, so a test sees that a route passed on what the caller sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from herder.config_store import RestartRequest, TargetState
from herder.errors import (
    ConnectorExists,
    ConnectorNotFound,
    ConnectorNotStopped,
    InvalidConnectorConfig,
    NoHandOff,
    NotLeader,
    TaskNotFound,
    TasksStillRunning,
)
from herder.metrics import RebalanceView, WorkerMetrics
from herder.status_store import Status
from herder.views import ClusterView, ConnectorView, WorkerState
from protocol.messages import EMPTY_ALLOCATION, Allocation, ConnectorTaskId
from worker.runtime.checkpoint_offsets import SourceOffset
from worker.runtime.task_state import StartupCounts, TaskState

WORKER_ID = "10.0.0.1:8083"


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
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    targets: dict[str, TargetState] = field(default_factory=dict)
    tasks: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    connector_statuses: dict[str, Status] = field(default_factory=dict)
    task_statuses: dict[ConnectorTaskId, Status] = field(default_factory=dict)
    offsets: dict[str, list[SourceOffset]] = field(default_factory=dict)
    restarts: list[RestartRequest] = field(default_factory=list)
    altered: list[tuple[str, Mapping[int, Mapping[int, object | None]]]] = field(
        default_factory=list
    )
    reset: list[str] = field(default_factory=list)
    logger_levels: list[tuple[str, str]] = field(default_factory=list)
    leave_timeouts: list[float] = field(default_factory=list)

    def add(self, name: str, tasks: int = 1, target: TargetState = TargetState.STARTED) -> None:
        """A connector that exists before the test's request, with `tasks` tasks."""
        self._write(name, {"connector.class": "generator", "tasks.max": str(tasks)}, target)

    def report(
        self, work: str | ConnectorTaskId, state: TaskState, trace: str | None = None
    ) -> None:
        """A status as the worker running `work` would write it."""
        status = Status(state, WORKER_ID, generation=1, trace=trace)
        if isinstance(work, str):
            self.connector_statuses[work] = status
        else:
            self.task_statuses[work] = status

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
            connectors={c: state(self.connector_statuses.get(c)) for c in self.owned.connectors},
            tasks={t: state(self.task_statuses.get(t)) for t in self.owned.tasks},
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
        )

    def connector_names(self) -> list[str]:
        return sorted(self.configs)

    def connector(self, name: str) -> ConnectorView:
        config = self._config(name)
        tasks = tuple(ConnectorTaskId(name, i) for i in range(len(self.tasks[name])))
        return ConnectorView(name=name, config=config, tasks=tasks, type="source")

    def task_configs(self, name: str) -> list[tuple[ConnectorTaskId, Mapping[str, str]]]:
        self._config(name)
        return [(ConnectorTaskId(name, i), c) for i, c in enumerate(self.tasks[name])]

    def connector_status(self, name: str) -> Status | None:
        return self.connector_statuses.get(name)

    def task_status(self, task: ConnectorTaskId) -> Status | None:
        if task.task not in range(len(self.connector(task.connector).tasks)):
            raise TaskNotFound(task)
        return self.task_statuses.get(task)

    def connector_offsets(self, name: str) -> list[SourceOffset]:
        self._config(name)
        return self.offsets.get(name, [])

    async def create_connector(
        self, name: str, config: Mapping[str, str], initial_state: TargetState
    ) -> ConnectorView:
        self._require_leader()
        if name in self.configs:
            raise ConnectorExists(name)
        return self._write(name, config, initial_state)

    async def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[bool, ConnectorView]:
        self._require_leader()
        created = name not in self.configs
        return created, self._write(name, config, self.targets.get(name, TargetState.STARTED))

    async def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None]
    ) -> ConnectorView:
        self._require_leader()
        merged = {k: v for k, v in {**self._config(name), **patch}.items() if v is not None}
        return self._write(name, merged, self.targets[name])

    async def delete_connector(self, name: str) -> None:
        self._require_leader()
        self._config(name)
        del self.configs[name], self.targets[name], self.tasks[name]

    async def restart(self, request: RestartRequest) -> None:
        self._require_leader()
        if request.task is None:
            self._config(request.connector)
        else:
            self.task_status(ConnectorTaskId(request.connector, request.task))
        self.restarts.append(request)

    async def set_target_state(self, name: str, state: TargetState) -> None:
        self._require_leader()
        self._config(name)
        self.targets[name] = state

    async def alter_connector_offsets(
        self, name: str, offsets: Mapping[int, Mapping[int, object | None]]
    ) -> None:
        self._require_stopped(name)
        self.altered.append((name, offsets))

    async def reset_connector_offsets(self, name: str) -> None:
        self._require_stopped(name)
        self.reset.append(name)

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        self.logger_levels.append((namespace, level))

    async def leave_for_good(self, timeout_s: float) -> bool:
        self.leave_timeouts.append(timeout_s)
        if self.hand_off_refusal is not None:
            raise NoHandOff(self.hand_off_refusal)
        return self.handed_over

    def _config(self, name: str) -> dict[str, str]:
        config = self.configs.get(name)
        if config is None:
            raise ConnectorNotFound(name)
        return config

    def _write(self, name: str, config: Mapping[str, str], target: TargetState) -> ConnectorView:
        if config.get("name", name) != name:
            raise InvalidConnectorConfig("the config's name differs from the connector's")
        if "connector.class" not in config:
            raise InvalidConnectorConfig('Missing required configuration "connector.class"')
        self.configs[name] = {**config, "name": name}
        self.targets[name] = target
        self.tasks[name] = [
            {**config, "task.id": str(i)} for i in range(int(config.get("tasks.max", "1")))
        ]
        return self.connector(name)

    def _require_leader(self) -> None:
        if not self.leads:
            raise NotLeader(self.leader_url)

    def _require_stopped(self, name: str) -> None:
        self._require_leader()
        self._config(name)
        if self.targets[name] is not TargetState.STOPPED:
            raise ConnectorNotStopped(name)
        running = sorted(
            task.task
            for task, status in self.task_statuses.items()
            if task.connector == name and status.state is TaskState.RUNNING
        )
        if running:
            raise TasksStillRunning(name, running)
