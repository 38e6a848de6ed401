"""The group loop of one worker: it carries out what `herder.member.lifecycle` decides.

Every source of change posts an event to one queue (the heartbeat, the watchdog
`fence_when_out_of_touch`, the ticker of the scheduled rebalance, config changes, REST
requests, a claim another worker took, `leave_for_good`); the loop hands each event to
the machine and does what comes back: a step at a time in its own task (join, carry an
assignment out, a chore), the REST requests in a task of theirs beside it, commands that
cannot wait at once (stopping all work when the coordinator may have given it away).
Decisions live in the machine; here is only I/O.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable

from herder.cancellation import cancel_and_wait
from herder.member import lifecycle_messages as do
from herder.member.heartbeat_pace import heartbeat_pause_s
from herder.member.joining import JoinCallbacks
from herder.member.lifecycle import Lifecycle
from herder.member.lifecycle_messages import (
    ClaimedElsewhere,
    ConfigChanged,
    ConfigUnreadable,
    CoordinatorLost,
    Event,
    FenceDue,
    HeartbeatAnswered,
    Joined,
    LeaveRequested,
    RequestsArrived,
    RequestsServed,
    RestartsDue,
    StepDone,
    StopRequested,
    Tick,
)
from herder.member.member_states import LifecycleSettings, first_report
from herder.member.membership import (
    TROUBLED_AFTER_ROUNDS,
    CoordinatorUnavailable,
    HeartbeatOutcome,
    Membership,
)
from herder.member.start_up import StartUp
from herder.metrics import RebalanceStats
from herder.requests import RequestQueue
from herder.settings import HerderSettings
from herder.stores.config_store import ConfigStore
from herder.stores.task_configs import TaskConfigWriter
from herder.tasks.work import LocalWork
from herder.views import WorkerState
from protocol.messages import NO_LOAD, Allocation
from protocol.versions import max_version_for, parse_connect_protocol

log = logging.getLogger(__name__)

FENCE_CHECK_INTERVAL_S = 0.5
LOG_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class GroupLoop:
    """This worker's membership in the group, and what it does about each generation."""

    def __init__(
        self,
        settings: HerderSettings,
        member: Membership,
        configs: ConfigStore,
        work: LocalWork,
        task_configs: TaskConfigWriter,
        requests: RequestQueue,
        restarts: RequestQueue,
        clock: Callable[[], float],
        new_token: Callable[[], str] = lambda: secrets.token_hex(8),
        load: Callable[[], int] = lambda: NO_LOAD,
    ) -> None:
        self._settings = settings
        self._member = member
        self.configs = configs
        self._work = work
        self._task_configs = task_configs
        self._requests = requests
        self._restarts = restarts
        self._clock = clock
        max_version = max_version_for(parse_connect_protocol(settings.connect_protocol))
        machine = LifecycleSettings(new_token(), max_version, member.is_static, settings.warm_up)
        self._machine = Lifecycle(machine)
        self._report = first_report(machine)
        """The machine's last `Report`: all the loop knows of it."""
        self._joining = JoinCallbacks(
            settings, configs, work, task_configs, machine, lambda: self._report, clock, load
        )
        self._start_up = StartUp(member, work, clock)
        self.rebalances = RebalanceStats()
        self.hand_offs = 0
        self.self_fencings = 0
        self._events: asyncio.Queue[Event | Exception] = asyncio.Queue()
        self._step: asyncio.Task[None] | None = None
        self._lane: asyncio.Task[None] | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._wake_requests: asyncio.Queue[int | None] = asyncio.Queue()
        self._wake_at_ms: int | None = None
        """When the ticker posts its next `Tick` at the latest: the ticker's alone."""
        self._handed_off = asyncio.Event()

    @property
    def worker_id(self) -> str:
        return self._settings.worker_id

    @property
    def owned(self) -> Allocation:
        return self._work.owned

    @property
    def generation(self) -> int:
        joined = self._report.generation
        return joined.generation if joined else -1

    @property
    def is_leader(self) -> bool:
        return self._report.is_leader

    @property
    def group_version(self) -> int:
        return self._report.group_version

    @property
    def leader_url(self) -> str | None:
        return self._joining.leader_url

    @property
    def members_led(self) -> int:
        """How many members the last round this worker led had (0: it has led none)."""
        return self._joining.members_led

    @property
    def ready(self) -> bool:
        return self._report.ready

    @property
    def unhealthy(self) -> str | None:
        """Why a worker that was ready is not any more (None while starting or ready)."""
        return self._report.unhealthy

    @property
    def state(self) -> WorkerState:
        if self._report.starting and self._settings.warm_up:
            return WorkerState.WARMING
        if self._report.leaving:
            return WorkerState.LEAVING
        if self.ready and self.round_trouble is None:
            return WorkerState.RUNNING
        if self.unhealthy is not None or self.round_trouble is not None:
            return WorkerState.UNHEALTHY
        return WorkerState.JOINING

    @property
    def failed_rounds(self) -> int:
        return self._member.failed_rounds

    @property
    def round_trouble(self) -> str | None:
        """Why the group cannot settle, once `TROUBLED_AFTER_ROUNDS` rounds in a row failed
        (for `/health`): a worker in such a loop runs its work but cannot take on more."""
        failing = self._member.failing_rounds
        if failing < TROUBLED_AFTER_ROUNDS:
            return None
        return (
            f"the group has failed {failing} rebalance rounds in a row (last: "
            f"{self._member.last_round_error}); retrying with back-off"
        )

    def scheduled_rebalance_s(self) -> float:
        """How long until the leader's scheduled rebalance (0: none pending)."""
        at_ms = self._wake_at_ms
        return 0.0 if at_ms is None else max(0.0, at_ms / 1000 - self._clock())

    # -- what others post ------------------------------------------------------------------

    def config_changed(self) -> None:
        """The config store's listener: a record arrived on the config topic."""
        self._events.put_nowait(ConfigChanged())

    async def leave_for_good(self, timeout_s: float) -> bool:
        """Announce that this worker is going away for good (scale-down); whether it ran
        nothing any more within `timeout_s`.

        The leader revokes all work of a leaving member at once and places it elsewhere in
        the next round, so it moves without waiting for `scheduled.rebalance.max.delay.ms`.
        The worker stays a member, running nothing, until it is stopped.
        """
        self._events.put_nowait(LeaveRequested())
        try:
            async with asyncio.timeout(timeout_s):
                await self._handed_off.wait()
        except TimeoutError:
            return False
        return True

    async def fence_when_out_of_touch(self) -> None:
        """The watchdog: a worker that cannot reach the coordinator (or whose rejoin
        outlasts the rebalance time-out) is no longer a member as far as the group knows,
        and its tasks may already be assigned elsewhere (Kafka's KAFKA-9184). One
        `FenceDue` per time out of touch: the member cannot win work back before it is in
        touch again (that takes a join's answer), and what it owns is stopped by the first."""
        margin_s = self._settings.heartbeat_interval_ms / 1000
        out_of_touch = False
        while True:
            await asyncio.sleep(FENCE_CHECK_INTERVAL_S)
            was, out_of_touch = out_of_touch, self._member.must_fence(margin_s)
            if out_of_touch and not was:
                self._events.put_nowait(FenceDue(owns_work=not self.owned.is_empty()))

    async def _heartbeat(self) -> None:
        joined_at = self._clock()
        while True:
            pause_s = heartbeat_pause_s(
                self._clock() - joined_at, self._settings.heartbeat_interval_ms
            )
            await asyncio.sleep(pause_s)
            outcome = await self._member.heartbeat()
            if outcome is not HeartbeatOutcome.OK:
                self._events.put_nowait(HeartbeatAnswered(outcome))
                return

    async def _tick(self) -> None:
        """Every `heartbeat.interval.ms`, and when the scheduled rebalance is due (`WakeAt`
        asks through `_wake_requests`; a due time is forgotten once its tick is posted)."""
        while True:
            pause_s = self._settings.heartbeat_interval_ms / 1000
            if (at_ms := self._wake_at_ms) is not None:
                pause_s = min(pause_s, max(0.0, at_ms / 1000 - self._clock()) + 0.001)
            try:
                async with asyncio.timeout(pause_s):
                    self._wake_at_ms = await self._wake_requests.get()
                continue
            except TimeoutError:
                pass
            now_ms = self._now_ms()
            if at_ms is not None and now_ms >= at_ms:
                self._wake_at_ms = None
            self._events.put_nowait(Tick(now_ms))

    async def _relay(self, flag: asyncio.Event, event: Event) -> None:
        while True:
            await flag.wait()
            flag.clear()
            self._events.put_nowait(event)

    # -- the interpreter -------------------------------------------------------------------

    async def run(self) -> None:
        self._start_up.begin()
        helpers = [
            asyncio.create_task(self._relay(self._requests.arrived, RequestsArrived())),
            asyncio.create_task(self._relay(self._restarts.arrived, RestartsDue())),
            asyncio.create_task(self._relay(self._work.claimed_elsewhere, ClaimedElsewhere())),
        ]
        self._ticker = asyncio.create_task(self._tick(), name="ticker")
        try:
            await self._decide(self._machine.start())
            while True:
                event = await self._events.get()
                if isinstance(event, Exception):
                    raise event
                await self._decide(self._machine.handle(event))
        finally:
            for task in (*helpers, self._ticker, self._step, self._lane, self._heartbeat_task):
                await cancel_and_wait(task)

    async def stop(self) -> None:
        await self._decide(self._machine.handle(StopRequested()))
        await cancel_and_wait(self._heartbeat_task)

    async def _decide(self, decision: do.Decision) -> None:
        for command in decision.now:
            await self._now(command)
        if decision.step is not None:
            self._step = asyncio.create_task(self._run_step(decision.step), name="group-step")

    async def _run_step(self, commands: tuple[do.Command, ...]) -> None:
        outcome: Event | None = None
        try:
            for command in commands:
                outcome = await self._execute(command) or outcome
        except TimeoutError:
            outcome = ConfigUnreadable()
        except Exception as exc:  # the loop's end: `run` raises it
            self._events.put_nowait(exc)
            return
        self._events.put_nowait(outcome or StepDone(self.owned, self._joining.work_changed()))

    async def _now(self, command: do.Command) -> None:
        """The commands the machine gives only to run at once, in the loop's own coroutine:
        the loop's fields are written here (and in `run`), never in a step."""
        match command:
            case do.Report(report):
                self._report = report
            case do.StartHeartbeat():
                self._heartbeat_task = asyncio.create_task(self._heartbeat(), name="heartbeat")
            case do.ServeRequests():
                self._lane = asyncio.create_task(self._serve_requests(), name="request-lane")
            case do.Departing():
                self.hand_offs += 1
            case do.HandOffDone():
                self._handed_off.set()
            case do.StopAllWork(do.StopWhy.FENCED):
                await self._fence()
            case _:
                await self._execute(command)

    async def _execute(self, command: do.Command) -> Event | None:
        match command:
            case do.Prepare(warm_up, probe_static):
                return await self._start_up.prepare(warm_up, probe_static)
            case do.Join():
                return await self._join()
            case do.JoinAsDynamic():
                self._member.join_as_dynamic()
            case do.Leave():
                await self._member.leave()
            case do.StopHeartbeat():
                await cancel_and_wait(self._heartbeat_task)
            case do.Announce(generation, assignment):
                self._joining.announce(generation, assignment)
            case do.StopWork(allocation):
                await self._work.stop(allocation)
            case do.StartWork(allocation, await_release):
                self._work.start(allocation, await_release)
            case do.StopAllWork():
                await self._work.stop_all()
            case do.MarkUnplaced():
                self._joining.mark_unplaced()
            case do.WakeAt(at_ms):
                self._wake_requests.put_nowait(at_ms)
            case do.ReadConfigToEnd():
                await self.configs.read_to_end()
            case do.FollowConfig():
                await self._work.follow_config(self.configs.snapshot())
            case do.FollowTargetStates():
                self._work.follow_target_states(self.configs.snapshot())
            case do.ReconcileTaskConfigs():
                await self._task_configs.reconcile()
            case do.RefreshTaskConfigs():
                await self._task_configs.refresh_due()
            case do.RequestRebalance(generation_number):
                reason = "scheduled rebalance delay expired"
                await self.configs.request_rebalance(generation_number, reason)
            case do.RunRestarts():
                await self._restarts.run_pending()
            case do.Pause(seconds):
                await asyncio.sleep(seconds)
            case do.Running():
                self._joining.log_running(self.generation)
            case do.TurnedReady(was):
                self._start_up.log_turning_ready(was)
            case do.TurnedUnhealthy():
                log.warning("no answer from the group coordinator in time: not ready any more")
            case do.AssignmentCarriedOut():
                self.rebalances.end(self._clock())
            case do.Note(level, text):
                log.log(LOG_LEVELS[level], "%s", text)
        return None

    async def _serve_requests(self) -> None:
        try:
            await self._requests.run_pending()
        except Exception as exc:  # the loop's end: `run` raises it
            self._events.put_nowait(exc)
            return
        self._events.put_nowait(RequestsServed())

    # -- steps -----------------------------------------------------------------------------

    async def _join(self) -> Event:
        self.rebalances.begin(self._clock())
        try:
            generation = await self._member.join(
                self._joining.subscribe, self._joining.on_leader, self._joining.forget_round
            )
        except CoordinatorUnavailable as exc:
            return CoordinatorLost(str(exc))
        return Joined(generation, self.owned, self._now_ms())

    async def _fence(self) -> None:
        if self.owned.is_empty():
            return
        log.warning("fencing myself: stopping %d tasks", len(self.owned.tasks))
        self.self_fencings += 1
        await self._work.stop_all()
        log.warning("fenced myself: my tasks are stopped until I have rejoined")

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)
