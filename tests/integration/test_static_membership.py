"""KIP-345 static membership on Apache Kafka, measured: a worker killed with SIGKILL (no
LeaveGroup) and restarted under its `group.instance.id` within `session.timeout.ms`
gets exactly its own tasks back, no other task restarts, and it happens long before
`scheduled.rebalance.max.delay.ms` would have handed them on.

A follower goes first, then the leader: the new leader of a group whose leader left
knows no earlier assignment, so the leader's tasks come back only if the restarted
process is in the very next generation. The heartbeat is a second so the others join
that generation quickly, as they would a moment late (`herder.member.sync_grace`'s hold
once kept the restarted leader out of it, and its tasks went to the others)."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster, TaskView, generator_config, start_times
from tests.support.polling import wait_until

pytestmark = pytest.mark.integration

TASKS = 6
SESSION_S = 45
DELAY_S = 180


def test_a_static_member_killed_and_back_within_its_session_keeps_its_tasks(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    cluster = Cluster(
        broker.bootstrap_servers,
        tmp_path,
        size=3,
        settings=[
            f"session.timeout.ms={SESSION_S * 1000}",
            "heartbeat.interval.ms=1000",
            f"scheduled.rebalance.max.delay.ms={DELAY_S * 1000}",
            # The premise is a rejoin inside session.timeout.ms, which a worker that
            # warms Spark up before joining (tens of seconds under CI load) cannot make.
            "worker.warmup.enabled=false",
        ],
    )
    for index, worker in enumerate(cluster.workers):
        worker.extra = [*worker.extra, f"group.instance.id=static-{index}"]
    with cluster.running():
        cluster.create("steady", generator_config(tmp_path / "out", TASKS))
        views = cluster.wait_converged(TASKS)
        leader = cluster.index_of(cluster.read("/workers")["leader"])
        follower = (leader + 1) % len(cluster.workers)
        for role, victim in (("follower", follower), ("leader", leader)):
            views = kill_and_restart(cluster, victim, views, role)


def kill_and_restart(
    cluster: Cluster, index: int, before: list[TaskView], role: str
) -> list[TaskView]:
    """SIGKILL worker `index`, start it again under the same identity, and check that it
    runs exactly its own tasks again and nothing else restarted; the views after."""
    victim_id = cluster.workers[index].url.removeprefix("http://")
    own = {(v.connector, v.task) for v in before if v.worker_id == victim_id}
    assert own, f"the {role} had no task: nothing to measure"
    witness = (index + 1) % len(cluster.workers)
    generation_before = cluster.workers_view(witness)["generation"]

    killed_at = time.monotonic()
    cluster.restart(index)
    after: list[TaskView] = wait_until(
        partial(cluster.converged, TASKS),
        SESSION_S + 60,
        what=f"the restarted {role}'s tasks running again",
        until=lambda views: all(start_times(views)[key] != start_times(before)[key] for key in own),
    )
    back_after_s = time.monotonic() - killed_at
    generation_after = cluster.workers_view(witness)["generation"]
    print(
        f"static rejoin of the {role}: own tasks running again {back_after_s:.1f} s after "
        f"SIGKILL; generation {generation_before} -> {generation_after}"
    )
    assert {(v.connector, v.task) for v in after if v.worker_id == victim_id} == own, (
        f"the restarted {role} did not get its own tasks back: {after}\n{cluster.herder_history()}"
    )
    others = {(v.connector, v.task) for v in before} - own
    assert {k: start_times(after)[k] for k in others} == {
        k: start_times(before)[k] for k in others
    }, f"a task on a worker that stayed up was restarted when the {role} came back"
    assert back_after_s < DELAY_S / 3
    return after
