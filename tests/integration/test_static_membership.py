"""KIP-345 static membership on Apache Kafka, measured: a worker killed with SIGKILL (no
LeaveGroup) and restarted under its `group.instance.id` within `session.timeout.ms`
gets exactly its own tasks back, no other task restarts, and it happens long before
`scheduled.rebalance.max.delay.ms` would have handed them on."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster, generator_config, start_times
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
            "heartbeat.interval.ms=3000",
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
        before = cluster.wait_converged(TASKS)
        generation_before = cluster.workers_view(0)["generation"]
        victim = cluster.workers[1]
        victim_id = victim.url.removeprefix("http://")
        own = {(v.connector, v.task) for v in before if v.worker_id == victim_id}
        assert own, "the victim had no task: nothing to measure"

        killed_at = time.monotonic()
        victim.kill()
        cluster.restart(1)
        after = wait_until(
            partial(cluster.converged, TASKS),
            SESSION_S + 60,
            what="the restarted worker's tasks running again",
            until=lambda views: all(
                start_times(views)[key] != start_times(before)[key] for key in own
            ),
        )
        back_after_s = time.monotonic() - killed_at
        generation_after = cluster.workers_view(0)["generation"]
        print(
            f"static rejoin: own tasks running again {back_after_s:.1f} s after SIGKILL; "
            f"generation {generation_before} -> {generation_after}"
        )

    assert {(v.connector, v.task) for v in after if v.worker_id == victim_id} == own
    others = {(v.connector, v.task) for v in before} - own
    assert {k: start_times(after)[k] for k in others} == {
        k: start_times(before)[k] for k in others
    }, "a task on a worker that stayed up was restarted"
    assert back_after_s < DELAY_S / 3
