"""The herder's loop and request path against in-memory stores and a one-member group:
requests wait for the join, run in order, and the work follows the config topic."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from herder.errors import ConnectorExists, InvalidConnectorConfig, NoHandOff
from herder.herder import DistributedHerder
from herder.member.heartbeat_pace import heartbeat_pause_s
from herder.member.membership import Generation, HeartbeatOutcome
from herder.requests import RequestTimedOut
from herder.stores.config_records import TargetState
from herder.views import WorkerState
from protocol.codec import Codec
from protocol.messages import Allocation, Assignment, AssignmentError, ConnectorTaskId
from tests.unit.herder.memory_cluster import (
    BYSTANDER,
    LoneCoordinator,
    RecordingRuntime,
    running_herder,
    take_up,
    until,
)
from worker.config.bounds import MAX_CONFIG_KEYS
from worker.plugins.task_state import TaskState
from worker.runtime.spark_queries import TaskFencedError

CONFIG = {"connector.class": "counting", "tasks.max": "2"}
EMPTY_V3_ANSWER = Assignment(3, 3, AssignmentError.NONE, "other", "http://other:8083", -1)


async def test_a_request_sent_before_the_join_waits_for_it(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    coordinator.joinable.clear()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        create = asyncio.create_task(herder.admin.create_connector("early", CONFIG))
        # Part of the scenario, not a wait: time passes to show the request waits.
        await asyncio.sleep(0.1)
        assert not create.done() and coordinator.generation == 0
        coordinator.joinable.set()
        view = await create
        assert view.name == "early" and len(view.tasks) == 2
        await until(lambda: len(runtime.running) == 2, "both tasks started")
        assert herder.is_leader and herder.generation >= 2


async def test_a_request_that_cannot_be_served_in_time_is_refused_and_never_runs(
    tmp_path: Path,
) -> None:
    coordinator = LoneCoordinator()
    coordinator.joinable.clear()
    async with running_herder(tmp_path, coordinator, request_timeout_s=0.2) as (herder, _):
        with pytest.raises(RequestTimedOut):
            await herder.admin.create_connector("late", CONFIG)
        coordinator.joinable.set()
        await until(lambda: herder.ready, "the worker joined")
        # Part of the scenario, not a wait: time passes to show the refused request never runs.
        await asyncio.sleep(0.1)
        assert herder.admin.connector_names() == []


async def test_concurrent_creates_of_one_name_run_one_after_the_other(tmp_path: Path) -> None:
    async with running_herder(tmp_path, LoneCoordinator()) as (herder, _):
        outcomes = await asyncio.gather(
            *(herder.admin.create_connector("same", CONFIG) for _ in range(5)),
            return_exceptions=True,
        )
        assert sum(not isinstance(o, BaseException) for o in outcomes) == 1
        assert sum(isinstance(o, ConnectorExists) for o in outcomes) == 4


async def test_a_refused_config_is_an_error_and_nothing_is_stored(tmp_path: Path) -> None:
    async with running_herder(tmp_path, LoneCoordinator()) as (herder, runtime):
        with pytest.raises(InvalidConnectorConfig, match="bad: refused"):
            await herder.admin.create_connector("broken", {**CONFIG, "bad": "yes"})
        assert herder.admin.connector_names() == [] and runtime.starts == []


async def test_patches_within_the_bounds_cannot_grow_a_config_past_them(tmp_path: Path) -> None:
    async with running_herder(tmp_path, LoneCoordinator()) as (herder, _):
        await herder.admin.create_connector("grown", CONFIG)
        stored = dict(herder.admin.connector("grown").config)
        padding = {f"pad.{i}": "x" for i in range(MAX_CONFIG_KEYS - len(stored) + 1)}
        with pytest.raises(InvalidConnectorConfig, match=f"at most {MAX_CONFIG_KEYS} keys"):
            await herder.admin.patch_connector_config("grown", padding)
        assert herder.admin.connector("grown").config == stored


async def test_work_follows_config_changes_through_rebalances(tmp_path: Path) -> None:
    async with running_herder(tmp_path, LoneCoordinator()) as (herder, runtime):
        await herder.admin.create_connector("grow", CONFIG)
        await until(lambda: len(runtime.running) == 2, "two tasks")
        await herder.admin.put_connector_config("grow", {**CONFIG, "tasks.max": "3"})
        await until(lambda: len(runtime.running) == 3, "a third task after the rebalance")
        await herder.admin.set_target_state("grow", TargetState.PAUSED)
        await until(lambda: not runtime.running, "paused tasks stopped")
        task = ConnectorTaskId("grow", 0)
        await until(
            lambda: (
                (status := herder.admin.task_status(task)) is not None
                and status.state is TaskState.PAUSED
            ),
            "PAUSED reported",
        )
        await herder.admin.delete_connector("grow")
        await until(lambda: herder.owned.is_empty(), "deleted work given up")
        assert herder.admin.connector_names() == [] and not runtime.running


async def test_a_lost_membership_stops_all_work_before_rejoining(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("lost", CONFIG)
        await until(lambda: len(runtime.running) == 2, "two tasks")
        stops_before = len(runtime.stops)
        generation = coordinator.generation
        coordinator.heartbeats.append(HeartbeatOutcome.MEMBER_LOST)
        await until(lambda: coordinator.generation > generation, "a rejoin")
        await until(lambda: len(runtime.running) == 2, "its tasks back")
        assert len(runtime.stops) - stops_before == 2


async def test_a_task_another_worker_claimed_is_given_up_before_the_next_join(
    tmp_path: Path,
) -> None:
    """A worker thawed from a freeze must not report as its own a task whose query the
    new owner's claim fenced: the leader would stop the live copy to hand it "back"."""
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("thawed", CONFIG)
        await until(lambda: len(runtime.running) == 2, "two tasks")
        lost = ConnectorTaskId("thawed", 0)
        runtime.lost.add(lost)
        joins = len(coordinator.joined_with)
        coordinator.heartbeats.append(HeartbeatOutcome.REJOIN)
        await until(lambda: len(coordinator.joined_with) > joins, "a rejoin")
        reported = Codec().decode_subscription(coordinator.joined_with[joins]).allocation
        assert lost not in reported.tasks
        assert ConnectorTaskId("thawed", 1) in reported.tasks
        assert lost in runtime.stops


async def test_a_join_retried_after_a_failed_round_reports_what_the_worker_runs_then(
    tmp_path: Path,
) -> None:
    """A worker frozen in the middle of a join resumes it: the rounds it retries must not
    report what it ran when the join began (a Tansu CI run left two tasks down so)."""
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("thawed", CONFIG)
        await until(lambda: len(runtime.running) == 2, "two tasks")
        lost = ConnectorTaskId("thawed", 0)
        coordinator.failing_joins.append(lambda: runtime.lost.add(lost))
        joins = len(coordinator.joined_with)
        coordinator.heartbeats.append(HeartbeatOutcome.REJOIN)
        await until(lambda: len(coordinator.joined_with) >= joins + 2, "a join of two rounds")
        first, retried = (
            Codec().decode_subscription(coordinator.joined_with[joins + i]).allocation
            for i in (0, 1)
        )
        assert lost in first.tasks
        assert lost not in retried.tasks and ConnectorTaskId("thawed", 1) in retried.tasks


async def test_a_task_fenced_between_rebalances_is_given_up_at_once(tmp_path: Path) -> None:
    """Found fenced by its query's monitor, a task is no longer this worker's: it rejoins
    so that the leader learns it now, not at a next rebalance that may never come."""
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("fenced", CONFIG)
        await until(lambda: len(runtime.running) == 2, "two tasks")
        lost = ConnectorTaskId("fenced", 1)
        generation = coordinator.generation
        runtime.lost.add(lost)
        runtime.fail(lost, str(TaskFencedError(lost, "other:8083 (epoch 2, generation 9)")))
        await until(lambda: coordinator.generation > generation, "a rejoin")
        reported = Codec().decode_subscription(coordinator.joined_with[-1]).allocation
        assert lost not in reported.tasks and lost in runtime.stops


async def test_stopping_the_herder_stops_the_work_and_leaves_the_group(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("bye", CONFIG)
        await until(lambda: len(runtime.running) == 2, "two tasks")
    assert not runtime.running and coordinator.left == 1


async def test_the_worker_warms_up_before_it_joins(tmp_path: Path) -> None:
    coordinator, runtime = LoneCoordinator(), RecordingRuntime()
    runtime.warmed.clear()
    async with running_herder(tmp_path, coordinator, runtime=runtime) as (herder, _):
        await until(lambda: runtime.warm_ups == 1, "the warm-up to begin")
        create = asyncio.create_task(herder.admin.create_connector("warm", CONFIG))
        # Part of the scenario, not a wait: time passes to show nothing joins meanwhile.
        await asyncio.sleep(0.1)
        assert herder.state is WorkerState.WARMING and coordinator.generation == 0
        assert herder.cluster_view().state is WorkerState.WARMING and not create.done()
        runtime.warmed.set()
        await create
        await until(lambda: len(runtime.running) == 2, "both tasks started")
        assert herder.cluster_view().state is WorkerState.RUNNING and runtime.warm_ups == 1


async def test_a_failed_warm_up_still_joins(tmp_path: Path) -> None:
    runtime = RecordingRuntime(warm_up_error=RuntimeError("no JVM here"))
    async with running_herder(tmp_path, LoneCoordinator(), runtime=runtime) as (herder, _):
        await until(lambda: herder.ready, "the worker joined")


@pytest.mark.parametrize(
    ("since_join_s", "pause_s"), [(0.0, 0.2), (9.9, 0.2), (10.0, 3.0), (60.0, 3.0)]
)
def test_heartbeats_are_frequent_right_after_a_rebalance(
    since_join_s: float, pause_s: float
) -> None:
    assert heartbeat_pause_s(since_join_s, 3_000) == pause_s
    assert heartbeat_pause_s(since_join_s, 100) == 0.1


async def test_a_leader_alone_in_its_group_knows_it(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    coordinator.joinable.clear()
    async with running_herder(tmp_path, coordinator) as (herder, _):
        assert not herder.alone
        coordinator.joinable.set()
        await until(lambda: herder.ready, "the worker joined")
        assert herder.alone


async def test_a_leaving_leader_stays_until_another_worker_shows_its_work(
    tmp_path: Path,
) -> None:
    """The round after the one that revokes a leaving leader's work gives that work to
    the others, and only the leader can run it; the work is handed over once another
    worker's status shows it: on Tansu a follower may take that round only later."""
    coordinator = LoneCoordinator(bystander=BYSTANDER)
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("moving", CONFIG)
        await until(lambda: len(runtime.running) == 1, "its share: one task of two")
        handed, announced_in = herder.owned, herder.generation
        leaving = asyncio.create_task(herder.leave_for_good(5.0))
        await until(lambda: herder.generation == announced_in + 2, "the round that places it")
        assert not runtime.running
        assert not leaving.done(), "handed over while no other worker showed the work"
        await take_up(herder, handed)
        assert await leaving


async def test_a_departure_whose_work_nobody_shows_is_not_a_hand_over(tmp_path: Path) -> None:
    coordinator = LoneCoordinator(bystander=BYSTANDER)
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("moving", CONFIG)
        await until(lambda: len(runtime.running) == 1, "its share: one task of two")
        assert not await herder.leave_for_good(0.5)
        assert not runtime.running


async def test_a_departure_nobody_could_take_over_is_refused_at_once(tmp_path: Path) -> None:
    """Alone, a leaving worker's work would go nowhere: `leave_for_good` says so instead
    of waiting out its timeout, and the work keeps running."""
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("staying", CONFIG)
        await until(lambda: len(runtime.running) == 2, "two tasks")
        generation = herder.generation
        with pytest.raises(NoHandOff, match="alone in the group: nobody to hand 2 tasks to"):
            await asyncio.wait_for(herder.leave_for_good(60.0), 1.0)
        assert len(runtime.running) == 2
        assert herder.generation == generation


MOVING = [ConnectorTaskId("moving", 0), ConnectorTaskId("moving", 1)]


@asynccontextmanager
async def handed_over_awaiting_release(
    tmp_path: Path,
) -> AsyncIterator[tuple[DistributedHerder, RecordingRuntime]]:
    """A member leaving with the tasks `MOVING` gives them up in the round that hands them
    to this worker (v3); their starts wait for the release, which the runtime holds back."""
    leaving = replace(BYSTANDER, allocation=Allocation.of((), MOVING), leaving=True)
    runtime = RecordingRuntime()
    runtime.released.clear()
    coordinator = LoneCoordinator(bystander=leaving)
    async with running_herder(tmp_path, coordinator, runtime=runtime) as (herder, _):
        await herder.admin.create_connector("moving", CONFIG)
        await until(lambda: sorted(runtime.awaited) == MOVING, "both starts to wait")
        yield herder, runtime


async def test_a_task_handed_over_in_its_revoking_round_starts_once_released(
    tmp_path: Path,
) -> None:
    """Until then its previous owner runs it, and only that owner shows it (`/workers`)."""
    async with handed_over_awaiting_release(tmp_path) as (herder, runtime):
        assert not runtime.running and herder.owned.tasks == frozenset(MOVING)
        assert not herder.cluster_view().workers[herder.worker_id].tasks
        runtime.released.set()
        await until(lambda: sorted(runtime.running) == MOVING, "both tasks started")
        assert herder.cluster_view().workers[herder.worker_id].tasks == frozenset(MOVING)


async def test_a_task_revoked_while_it_awaits_its_release_never_starts(tmp_path: Path) -> None:
    """Its start is cancelled, not waited for: it must not claim a task it no longer owns
    (it would fence the task's next owner), nor hold the revocation up."""
    async with handed_over_awaiting_release(tmp_path) as (herder, runtime):
        await asyncio.wait_for(herder.admin.delete_connector("moving"), 5.0)
        await until(lambda: herder.owned.is_empty(), "the deleted tasks given up")
        runtime.released.set()
        for _ in range(10):  # let a start that was not cancelled run on
            await asyncio.sleep(0)
        assert runtime.starts == [] and not runtime.running


async def test_a_static_members_first_join_keeps_an_assignment_made_for_this_run(
    tmp_path: Path,
) -> None:
    """The leader echoes the run's token: nothing to force, the work starts at once."""
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator, group_instance_id="pod-0") as (herder, _):
        await until(lambda: herder.ready, "the worker joined")
        assert coordinator.left == 0 and herder.generation == 1


@pytest.mark.parametrize(
    "replayed",
    [
        replace(EMPTY_V3_ANSWER, incarnation="a-predecessor"),
        replace(EMPTY_V3_ANSWER, version=2, leader_max_version=2),
    ],
    ids=["a-predecessors-run", "a-v2-leader"],
)
async def test_a_static_members_first_join_forces_a_round_over_a_replayed_assignment(
    tmp_path: Path, replayed: Assignment
) -> None:
    """An assignment made for a predecessor (its run's token, or none from a v2 leader)
    is one this process never saw: it leaves and rejoins once to get its own."""
    coordinator = LoneCoordinator()
    coordinator.replays = [Generation(7, "me", "other", Codec().encode_assignment(replayed))]
    async with running_herder(tmp_path, coordinator, group_instance_id="pod-0") as (herder, _):
        await until(lambda: herder.ready, "the worker joined")
        assert coordinator.left == 1 and herder.generation == 1


@pytest.mark.parametrize("honoured", [True, False])
async def test_a_static_member_probes_the_broker_before_its_first_join(
    tmp_path: Path, honoured: bool
) -> None:
    """On a broker that ignores a static member's changed subscription the worker joins
    without group.instance.id from its first join, not from the middle of a hand-off."""
    coordinator = LoneCoordinator()
    coordinator.honours_static_rejoin = honoured
    async with running_herder(tmp_path, coordinator, group_instance_id="pod-0") as (herder, _):
        await until(lambda: herder.ready, "the worker joined")
        assert coordinator.static_probes == 1 and coordinator.is_static is honoured
        assert coordinator.left == 0 and herder.generation == 1


async def test_a_dynamic_member_does_not_probe(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, _):
        await until(lambda: herder.ready, "the worker joined")
        assert coordinator.static_probes == 0


async def test_a_static_member_whose_changed_subscription_is_ignored_joins_as_dynamic(
    tmp_path: Path,
) -> None:
    """Tansu answers a static member's changed subscription with the generation it has:
    the worker forces a round, and from then on joins without group.instance.id, since
    forced rounds in turn kept a three-worker group from settling for minutes."""
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator, group_instance_id="pod-0") as (herder, _):
        await until(lambda: herder.ready, "the worker joined")
        answered = Codec().encode_assignment(replace(EMPTY_V3_ANSWER, leader_id="me"))
        coordinator.replays = [Generation(herder.generation, "me", "me", answered)]
        await herder.admin.create_connector("grow", CONFIG)
        await until(lambda: coordinator.left == 1, "the forced round")
        assert coordinator.is_static is False
        left = coordinator.left
        await until(lambda: len(herder.owned.tasks) == 2, "its tasks after the forced round")
        assert coordinator.left == left, "a dynamic member needs no more forced rounds"


async def test_a_group_whose_rounds_keep_failing_says_so_on_health(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, _):
        await until(lambda: herder.ready, "the worker joined")
        coordinator.failing_rounds = 3
        coordinator.last_round_error = "SyncGroup answered error 27"
        assert not herder.ready
        assert herder.state is WorkerState.UNHEALTHY
        assert herder.unhealthy is not None and "3 rebalance rounds in a row" in herder.unhealthy
        assert "error 27" in herder.unhealthy
        coordinator.failing_rounds = 0
        assert herder.ready and herder.unhealthy is None
