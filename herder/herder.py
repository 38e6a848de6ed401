"""The distributed herder: one per worker, it keeps this worker's share of the work in step
with the group's decisions and serves what REST asks of the cluster.

It wires the parts and owns their lifecycle: `GroupLoop` (membership and what each
generation means, `herder.member.group_loop`), `LocalWork` (the connectors and Spark
tasks this worker runs, `herder.tasks.work`), `ClusterAdmin` (the operations behind REST,
`herder.admin.cluster_admin`) and the `RequestQueue` through which every REST write
reaches the loop. REST calls `admin` directly for the cluster operations and this class
for the worker's own state. Stores, membership and the runtime are passed in, so the
herder runs against fakes in unit tests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from herder.admin.cluster_admin import ClusterAdmin
from herder.cancellation import cancel_and_wait
from herder.errors import NoHandOff, NotLeader
from herder.member.group_loop import GroupLoop
from herder.member.membership import Membership
from herder.metrics import WorkerMetrics
from herder.requests import RequestQueue
from herder.runtime import ConnectorPlugins, TaskRuntime
from herder.settings import HerderSettings
from herder.stores.config_store import ConfigStore
from herder.stores.status_store import Status, StatusStore, not_shown_elsewhere
from herder.stores.task_configs import TaskConfigWriter
from herder.tasks.auto_restart import RestartPolicy
from herder.tasks.work import LocalWork
from herder.views import ClusterView, WorkerState
from protocol.messages import EMPTY_ALLOCATION, NO_LOAD, Allocation, ConnectorTaskId
from protocol.versions import LEAVING_FLAG_VERSION
from worker.plugins.task_state import TaskState, TaskStatus

log = logging.getLogger(__name__)

STATUS_FLUSH_TIMEOUT_S = 10.0
"""How long shutdown waits for the last status writes before leaving the group anyway."""
TAKE_UP_POLL_S = 0.1
"""How often a leaving worker looks whether the others show its work (the status topic
is read in the background, so this reads memory)."""


class DistributedHerder:
    """Runs this worker's share of connectors and tasks as the group decides."""

    def __init__(
        self,
        settings: HerderSettings,
        member: Membership,
        configs: ConfigStore,
        statuses: StatusStore,
        runtime: TaskRuntime,
        plugins: ConnectorPlugins,
        prepare_topics: Callable[[], Awaitable[str | None]],
        clock: Callable[[], float] = time.time,
        set_logger_level: Callable[[str, str], object] | None = None,
        auto_restart: RestartPolicy | None = None,
        load: Callable[[], int] = lambda: NO_LOAD,
    ) -> None:
        """`prepare_topics` creates the internal topics and answers the Kafka cluster id;
        `set_logger_level(namespace, level)` applies the cluster-wide log levels that any
        worker writes to the config topic after this one started (KIP-976);
        `auto_restart` is the worker's `auto.restart.*` (default: their defaults);
        `load` measures this worker's load for the group's leader (`Subscription.load`;
        default: unmeasured)."""
        self._member = member
        self._clock = clock
        self.configs = configs
        self.statuses = statuses
        self._prepare_topics = prepare_topics
        self._set_logger_level = set_logger_level
        self._requests = RequestQueue(settings.request_timeout_s)
        self._restarts = RequestQueue(settings.request_timeout_s)
        """Automatic restarts: between rebalances, unlike REST requests (`Lifecycle`)."""
        self._work = LocalWork(
            settings.worker_id,
            runtime,
            plugins,
            configs,
            statuses,
            self._generation,
            clock,
            restart_policy=auto_restart or RestartPolicy(),
            submit=self._restarts.submit,
        )
        task_configs = TaskConfigWriter(configs, plugins, clock)
        self._loop = GroupLoop(
            settings,
            member,
            configs,
            self._work,
            task_configs,
            self._requests,
            self._restarts,
            clock,
            load=load,
        )
        self.admin = ClusterAdmin(
            configs, statuses, plugins, task_configs, runtime, self._leader, self._requests.submit
        )
        self._loop_task: asyncio.Task[None] | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self.cluster_id: str | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def worker_id(self) -> str:
        return self._loop.worker_id

    @property
    def owned(self) -> Allocation:
        return self._work.owned

    @property
    def generation(self) -> int:
        return self._loop.generation

    def _generation(self) -> int:
        return self._loop.generation

    @property
    def is_leader(self) -> bool:
        return self._loop.is_leader

    @property
    def leader_url(self) -> str | None:
        return self._loop.leader_url

    @property
    def ready(self) -> bool:
        return self._loop.ready and self._loop.round_trouble is None

    @property
    def alone(self) -> bool:
        """Whether this worker leads a group of one: it has nobody to hand work to."""
        return self._loop.is_leader and self._loop.members_led == 1

    @property
    def can_announce_leaving(self) -> bool:
        """Whether the group speaks a version with the `leaving` flag: an eager (v0) or v1
        group would give a leaving worker its work straight back."""
        return self._loop.group_version >= LEAVING_FLAG_VERSION

    @property
    def state(self) -> WorkerState:
        return self._loop.state

    @property
    def unhealthy(self) -> str | None:
        """Why a worker that was ready is not any more (None while starting or ready)."""
        return self._loop.round_trouble or self._loop.unhealthy

    async def start(self) -> None:
        """Connect, create the internal topics, replay them, then run the group loop.

        Raises `CoordinatorUnavailable` when the broker cannot be reached at all, so the
        CLI can say so in one line instead of retrying forever.
        """
        await self._member.start()
        try:
            self.cluster_id = await self._prepare_topics()
        except Exception:
            await self._member.close()
            raise
        self.configs.add_listener(self._loop.config_changed)
        await self.configs.start()
        await self.statuses.start()
        await self.configs.read_to_end()
        await self.statuses.read_to_end()
        self.configs.take_restart_requests()
        self.configs.take_logger_levels()
        self.configs.add_listener(self._apply_logger_levels)
        self._work.status_writer.start()
        self._watchdog = asyncio.create_task(self._loop.fence_when_out_of_touch(), name="watchdog")
        self._loop_task = asyncio.create_task(self._loop.run(), name="herder")

    async def stop(self) -> None:
        """Stop every task, record them UNASSIGNED, then leave the group and close."""
        self._requests.close()
        self._restarts.close()
        await self._work.close_restarts()
        for task in (self._watchdog, self._loop_task):
            await cancel_and_wait(task)
        await self._loop.stop()
        await self._work.stop_all()
        await self._work.status_writer.close(STATUS_FLUSH_TIMEOUT_S)
        await self._member.leave()
        await self.statuses.stop()
        await self.configs.stop()
        await self._member.close()

    def hand_off_refusal(self) -> str | None:
        """Why announcing a departure now would hand this worker's work to nobody, if it
        would: a worker leading a group of one has nobody to give it to, and a group
        whose protocol has no `leaving` flag (eager, v1) would give it straight back."""
        if not self.can_announce_leaving:
            return (
                "the group's protocol cannot announce a departure (connect.protocol=eager, "
                f"or an older member): its {len(self.owned.tasks)} tasks would come back"
            )
        if self.alone:
            return f"alone in the group: nobody to hand {len(self.owned.tasks)} tasks to"
        return None

    async def leave_for_good(self, timeout_s: float) -> bool:
        """Announce a departure for good (scale-down); whether, within `timeout_s`, this
        worker ran nothing any more (see `GroupLoop.leave_for_good`) and the statuses
        showed all it ran on other workers. Raises `NoHandOff` at once rather than wait
        `timeout_s` for a hand-off that cannot happen."""
        refusal = self.hand_off_refusal()
        if refusal is not None:
            raise NoHandOff(refusal)
        handed = self.owned
        clock = asyncio.get_running_loop()
        deadline = clock.time() + timeout_s
        if not await self._loop.leave_for_good(timeout_s):
            return False
        await self._statuses_shown(max(deadline - clock.time(), 0.0))
        return await self._taken_up(handed, lambda: deadline - clock.time())

    async def _taken_up(self, handed: Allocation, left_s: Callable[[], float]) -> bool:
        """Until the statuses show each of `handed` that is still configured on another
        worker: running nothing, this worker has given its work up, but handed it over
        only once another runs it. A leader that left before its follower had taken the
        round that placed its work left that work unplaced until the follower, alone, led
        a round of its own (on Tansu, 13 s of a bounced leader's tasks' 15 s gap)."""
        while True:
            configured = self.configs.snapshot().configured()
            waiting = not_shown_elsewhere(
                handed.intersection(configured), self.statuses.owners(), self.worker_id
            )
            if waiting.is_empty():
                return True
            if left_s() <= 0:
                log.info(
                    "handed over, but no other worker shows %d connectors and %d tasks yet",
                    len(waiting.connectors),
                    len(waiting.tasks),
                )
                return False
            await asyncio.sleep(min(TAKE_UP_POLL_S, left_s()))

    async def _statuses_shown(self, timeout_s: float) -> None:
        """Until the status topic, and this worker's view of it, show every task stopped
        in the hand-off as stopped: a caller told "handed over" then reads no task RUNNING
        here. The writes wait for their turn and the view for its reader's next fetch (up
        to `fetch.max.wait.ms`); without this the answer ran ahead of the status, which
        still said RUNNING on this worker for tasks it had stopped."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._work.status_writer.flush(timeout_s)
                await self.statuses.read_to_end(timeout_s)
        except TimeoutError:
            log.warning("handed over, but the status topic does not show it yet")

    async def wait_closed(self) -> None:
        """Return when the group loop ends (it only ends on a fatal error)."""
        if self._loop_task is not None:
            await self._loop_task

    def _apply_logger_levels(self) -> None:
        """A record this worker refuses (a name or level its REST API would refuse) is
        logged and skipped: any worker, of any version, may have written it."""
        for namespace, level in self.configs.take_logger_levels():
            if self._set_logger_level is None:
                continue
            try:
                self._set_logger_level(namespace, level)
            except ValueError as exc:
                log.warning(
                    "Ignoring the cluster-wide level %r for logger %r: %s", level, namespace, exc
                )

    def _leader(self) -> None:
        if not self.is_leader:
            raise NotLeader(self.leader_url)

    # -- what REST asks ----------------------------------------------------------------------

    def on_task_state(self, task: ConnectorTaskId, status: TaskStatus) -> None:
        """The runtime's callback; must be called on the herder's event loop."""
        self._work.on_task_state(task, status)

    def cluster_view(self) -> ClusterView:
        workers = {self.worker_id: EMPTY_ALLOCATION, **self.statuses.owners()}
        workers[self.worker_id] = self._work.at_work
        return ClusterView(
            leader_url=self.leader_url,
            generation=self.generation,
            protocol_version=self._loop.group_version,
            scheduled_rebalance_ms=int(self._loop.scheduled_rebalance_s() * 1000),
            workers=workers,
            state=self._loop.state,
        )

    def metrics(self) -> WorkerMetrics:
        owned = self.owned
        connectors = {
            name: _state_name(self.statuses.connector(name)) for name in sorted(owned.connectors)
        }
        tasks = {task: _state_name(self.statuses.task(task)) for task in sorted(owned.tasks)}
        return WorkerMetrics(
            state=self._loop.state,
            generation=self.generation,
            protocol_version=self._loop.group_version,
            scheduled_rebalance_ms=int(self._loop.scheduled_rebalance_s() * 1000),
            connectors=connectors,
            tasks=tasks,
            rebalance=self._loop.rebalances.view(self._clock()),
            connector_startups=replace(self._work.connector_startups),
            hand_offs=self._loop.hand_offs,
            self_fencings=self._loop.self_fencings,
            failed_rounds=self._loop.failed_rounds,
            auto_restarts=self._work.restarts.begun,
            refused_config_records=self.configs.refused_records,
        )


def _state_name(status: Status | None) -> str:
    """Lower-case, as Kafka Connect's connector metrics show a state."""
    return (status.state if status is not None else TaskState.UNASSIGNED).value.lower()
