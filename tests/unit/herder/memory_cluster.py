"""In-memory stand-ins for what the herder talks to, so its loop runs in a unit test.

The stores are the real ConfigStore and StatusStore over a `MemoryLog`; the group
coordinator is a one-member group that calls the herder's own leader step; the runtime
records which tasks it holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from herder.herder import DistributedHerder
from herder.member.membership import (
    Generation,
    HeartbeatOutcome,
    JoinedMembers,
    LeaderCallback,
    Subscribe,
)
from herder.settings import HerderSettings
from herder.stores.config_store import ConfigStore
from herder.stores.kafka_log import OpenLog, RecordHandler
from herder.stores.status_store import Status, StatusStore
from herder.tasks.auto_restart import RestartPolicy
from protocol.codec import Codec
from protocol.messages import Allocation, ConnectorTaskId, Subscription
from protocol.versions import CURRENT_VERSION
from tests.support.polling import wait_until_async
from worker.plugins.task_state import StateListener, TaskState, TaskStatus
from worker.runtime.task_offsets import InitialOffsets, OffsetsError, SourceOffset


class MemoryLog:
    """A topic in memory; records are applied soon after they are sent, as a tailing
    reader would, and `read_to_end` applies whatever is still pending."""

    def __init__(self, on_record: RecordHandler) -> None:
        self._on_record = on_record
        self._records: list[tuple[bytes, bytes | None]] = []
        self._position = 0

    @property
    def position(self) -> int:
        return self._position

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, key: bytes, value: bytes | None) -> int:
        self._records.append((key, value))
        asyncio.get_running_loop().call_soon(self._apply_pending)
        return len(self._records) - 1

    async def send_soon(self, key: bytes, value: bytes | None) -> asyncio.Future[int]:
        offset: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        offset.set_result(await self.send(key, value))
        return offset

    async def read_to_end(self, timeout_s: float = 30.0) -> int:
        self._apply_pending()
        return self._position

    async def read_through(self, offset: int, timeout_s: float = 30.0) -> None:
        self._apply_pending()

    def _apply_pending(self) -> None:
        while self._position < len(self._records):
            key, value = self._records[self._position]
            self._position += 1
            self._on_record(key, value, self._position - 1)


BYSTANDER = Subscription(
    version=CURRENT_VERSION,
    max_version=CURRENT_VERSION,
    worker_id="127.0.0.1:9",
    url="http://127.0.0.1:9",
    config_offset=-1,
)
"""A member that joins every round and runs whatever it is given, without a word."""


class LoneCoordinator:
    """A group of one, or two with `bystander`: every join is a new generation that this
    member leads.

    `joinable` holds joins back (a coordinator that has not answered yet); `heartbeats`
    is what the next heartbeats answer; `replays` are assignments the next joins get
    without a round, as Apache Kafka hands a returning static member its predecessor's;
    `failing_joins` are JoinGroup rounds the next join goes through first, each running
    its callable (what happens while the round fails) before the join asks again.
    """

    def __init__(self, bystander: Subscription | None = None) -> None:
        self._others = {"other": Codec().encode_subscription(bystander)} if bystander else {}
        self.joinable = asyncio.Event()
        self.joinable.set()
        self.generation = 0
        self.joined_with: list[bytes] = []
        self.heartbeats: list[HeartbeatOutcome] = []
        self.replays: list[Generation] = []
        self.failing_joins: list[Callable[[], None]] = []
        self.left = 0

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def join(
        self,
        subscribe: Subscribe,
        on_leader: LeaderCallback,
        on_leader_sync_failed: Callable[[], None],
    ) -> Generation:
        await self.joinable.wait()
        metadata = await subscribe()
        self.joined_with.append(metadata)
        while self.failing_joins:
            self.failing_joins.pop(0)()
            metadata = await subscribe()
            self.joined_with.append(metadata)
        if self.replays:
            return replace(self.replays.pop(0), subscription=metadata)
        self.generation += 1
        metadata_of = {"me": metadata, **self._others}
        members = JoinedMembers(self.generation, "me", metadata_of, dict.fromkeys(metadata_of))
        assignments = await on_leader(members)
        return Generation(self.generation, "me", "me", assignments["me"], metadata)

    async def heartbeat(self) -> HeartbeatOutcome:
        return self.heartbeats.pop(0) if self.heartbeats else HeartbeatOutcome.OK

    async def leave(self) -> None:
        self.left += 1

    def must_fence(self, margin_s: float) -> bool:
        return False

    failing_rounds = 0
    failed_rounds = 0
    last_round_error = ""
    is_static = False

    def join_as_dynamic(self) -> None:
        self.is_static = False

    honours_static_rejoin = True
    static_probes = 0

    async def static_rejoin_honoured(self) -> bool:
        self.static_probes += 1
        return self.honours_static_rejoin


RUNNING = TaskStatus(TaskState.RUNNING, started_at="2026-01-01T00:00:00.000+00:00")
"""What a start that succeeds reports."""


@dataclass
class RecordingRuntime:
    """Holds what it was asked to start until it is asked to stop it.

    With `on_state` set it reports each start as the Spark runtime does: RUNNING, or
    FAILED with the trace `failing` holds for the task (a failed task stays held).
    """

    running: dict[ConnectorTaskId, Mapping[str, str]] = field(default_factory=dict)
    starts: list[ConnectorTaskId] = field(default_factory=list)
    awaited: list[ConnectorTaskId] = field(default_factory=list)
    """The starts that were to wait for the task's release by its previous owner."""
    stops: list[ConnectorTaskId] = field(default_factory=list)
    warm_ups: int = 0
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by default; a test clears it to hold starts that await a release."""
    warmed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by default; a test clears it to hold the worker in its warm-up."""
    warm_up_error: Exception | None = None
    on_state: StateListener | None = None
    failing: dict[ConnectorTaskId, str] = field(default_factory=dict)
    lost: set[ConnectorTaskId] = field(default_factory=set)
    """Tasks a test says another worker has claimed since this runtime started them."""
    offsets: dict[str, list[SourceOffset]] = field(default_factory=dict)
    """What each connector's tasks have committed, as a test says."""
    altered: list[tuple[str, Mapping[int, Mapping[int, object | None]]]] = field(
        default_factory=list
    )
    reset: list[str] = field(default_factory=list)
    seeded: list[tuple[str, InitialOffsets]] = field(default_factory=list)
    holding: set[str] = field(default_factory=set)
    """Connectors whose name holds offsets already, which a seed is refused for."""

    statuses: dict[ConnectorTaskId, TaskStatus] = field(default_factory=dict)
    """The held tasks' statuses, as the Spark runtime keeps them."""

    def __post_init__(self) -> None:
        self.warmed.set()
        self.released.set()

    async def start_task(
        self,
        task_id: ConnectorTaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        generation: int,
    ) -> None:
        self.starts.append(task_id)
        self.running[task_id] = task_config
        trace = self.failing.get(task_id)
        self._change(task_id, TaskStatus(TaskState.FAILED, trace) if trace else RUNNING)

    async def await_release(self, task_id: ConnectorTaskId) -> bool:
        self.awaited.append(task_id)
        await self.released.wait()
        return True

    def fail(self, task_id: ConnectorTaskId, trace: str) -> None:
        """A running task's query dies (the Spark runtime's monitor reports it)."""
        assert task_id in self.running
        self._change(task_id, TaskStatus(TaskState.FAILED, trace))

    def _change(self, task_id: ConnectorTaskId, status: TaskStatus) -> None:
        self.statuses[task_id] = status
        if self.on_state is not None:
            self.on_state(task_id, status)

    async def stop_task(self, task_id: ConnectorTaskId) -> None:
        self.stops.append(task_id)
        self.running.pop(task_id, None)
        self.statuses.pop(task_id, None)

    async def stop_all(self) -> None:
        for task in list(self.running):
            await self.stop_task(task)

    async def warm_up(self) -> None:
        self.warm_ups += 1
        await self.warmed.wait()
        if self.warm_up_error is not None:
            raise self.warm_up_error

    async def lost_to_others(self) -> set[ConnectorTaskId]:
        return self.lost & set(self.running)

    def held(self) -> set[ConnectorTaskId]:
        return set(self.running)

    def task_status(self, task_id: ConnectorTaskId) -> TaskStatus | None:
        return self.statuses.get(task_id)

    async def committed_offsets(self, connector: str) -> list[SourceOffset]:
        return self.offsets.get(connector, [])

    async def alter_offsets(
        self, connector: str, offsets: Mapping[int, Mapping[int, object | None]]
    ) -> None:
        self.altered.append((connector, offsets))

    async def reset_offsets(self, connector: str) -> None:
        self.reset.append(connector)

    async def seed_offsets(self, connector: str, seed: InitialOffsets) -> None:
        if connector in self.holding:
            raise OffsetsError(f"Connector {connector} has offsets already")
        self.seeded.append((connector, seed))


class CountingPlugins:
    """A connector whose `tasks.max` is its task count; `bad` configs are refused."""

    def validate(self, config: Mapping[str, str]) -> None:
        if "bad" in config:
            raise ValueError("bad: refused")

    def admit(
        self,
        config: Mapping[str, str],
        others: Mapping[str, Mapping[str, str]],
        *,
        will_run: bool,
    ) -> None:
        self.validate(config)

    def task_configs(self, config: Mapping[str, str]) -> list[dict[str, str]]:
        return [{"task": str(i)} for i in range(int(config["tasks.max"]))]

    def connector_type(self, config: Mapping[str, str]) -> str:
        return "source"

    def takes_initial_offsets(self, config: Mapping[str, str]) -> bool:
        return "files" not in config

    def task_configs_refresh_s(self, config: Mapping[str, str]) -> float | None:
        return None


@asynccontextmanager
async def running_herder(
    tmp_path: Path,
    coordinator: LoneCoordinator | None = None,
    *,
    request_timeout_s: float = 5.0,
    runtime: RecordingRuntime | None = None,
    plugins: CountingPlugins | None = None,
    auto_restart: RestartPolicy | None = None,
    group_instance_id: str | None = None,
    config_log: OpenLog = MemoryLog,
) -> AsyncIterator[tuple[DistributedHerder, RecordingRuntime]]:
    """A whole herder on memory: one member, in-memory topics (the config topic's
    `config_log`), a recording runtime."""
    runtime = runtime or RecordingRuntime()
    settings = HerderSettings(
        worker_id="me:8083",
        rest_url="http://me:8083",
        connect_protocol="sessioned",
        scheduled_rebalance_max_delay_ms=10_000,
        heartbeat_interval_ms=20,
        group_instance_id=group_instance_id,
        checkpoint_root=tmp_path,
        request_timeout_s=request_timeout_s,
    )

    async def no_topics() -> str | None:
        return "memory"

    member = coordinator or LoneCoordinator()
    member.is_static = group_instance_id is not None
    herder = DistributedHerder(
        settings,
        member,
        ConfigStore(config_log),
        StatusStore(MemoryLog),
        runtime,
        plugins or CountingPlugins(),
        no_topics,
        auto_restart=auto_restart,
    )
    runtime.on_state = herder.on_task_state
    await herder.start()
    try:
        yield herder, runtime
    finally:
        await herder.stop()


async def until(condition: Callable[[], bool], what: str) -> None:
    """The suite's polling policy, at the pace of a herder that runs in memory."""
    await wait_until_async(condition, 5.0, what=what, interval_s=0.01)


async def take_up(herder: DistributedHerder, work: Allocation) -> None:
    """What the bystander writes once it runs `work`."""
    running = Status(TaskState.RUNNING, BYSTANDER.worker_id, herder.generation)
    for name in work.connectors:
        await herder.statuses.put_connector(name, running)
    for task in work.tasks:
        await herder.statuses.put_task(task, running)
