"""A real three-worker cluster: cooperative rebalancing as the KIP-415 traces describe it,
with one process per worker, the real broker and real Spark tasks."""

from __future__ import annotations

import signal
import time
from functools import partial
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import (
    Cluster,
    TaskView,
    generator_config,
    spread,
    spread_per_connector,
    start_times,
    task_key,
)
from tests.support.file_sink import committed_column
from tests.support.polling import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.long]

DELAY_S = 20


def owned_by(views: list[TaskView], worker_id: str) -> set[tuple[str, int]]:
    return {(v.connector, v.task) for v in views if v.worker_id == worker_id}


def unchanged(before: dict[tuple[str, int], str | None], views: list[TaskView]) -> bool:
    now = start_times(views)
    return all(now.get(key) == started for key, started in before.items())


def scheduled_delay_ms(url: str) -> float:
    """What is left of the worker's scheduled-rebalance delay (0: none), from /metrics."""
    answer = httpx.get(f"{url}/metrics", timeout=10)
    answer.raise_for_status()
    return next(
        sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
        if sample.name == "sparkherd_scheduled_rebalance_remaining_ms"
    )


def assert_balanced(views: list[TaskView], workers: int) -> None:
    assert spread(views) <= 1, views
    assert spread_per_connector(views, workers) <= 1, views


def test_cooperative_cluster_follows_kip_415(broker: EmbeddedBroker, tmp_path: Path) -> None:
    """On Apache Kafka only: at five to six minutes it is the suite's longest test; Tansu's
    smoke set has a cooperative cluster in test_scale_down."""
    cluster = Cluster(
        broker.bootstrap_servers,
        tmp_path,
        size=3,
        # A restarted worker joins only once warm: under CI load the warm-up alone can
        # outlast this short delay, and the bounce step below needs the worker back
        # inside it. The warm-up has tests of its own (test_shutdown, test_rolling_bounce).
        settings=[
            f"scheduled.rebalance.max.delay.ms={DELAY_S * 1000}",
            "worker.warmup.enabled=false",
        ],
    )
    with cluster.running():
        cluster.create("alpha", generator_config(tmp_path / "out" / "alpha", tasks=4))
        cluster.create("beta", generator_config(tmp_path / "out" / "beta", tasks=4))
        views = cluster.wait_at_rest(8)
        assert_balanced(views, 3)

        # A new connector starts without restarting anything that runs.
        before = start_times(views)
        cluster.create("gamma", generator_config(tmp_path / "out" / "gamma", tasks=1))
        views = cluster.wait_at_rest(9)
        assert unchanged(before, views), "adding a connector restarted running tasks"

        # SIGKILL a follower: its tasks wait for the delay, nothing else restarts.
        leader_url = cluster.workers_view()["leader"]
        victim = next(i for i, w in enumerate(cluster.workers) if w.url != leader_url)
        victim_id = cluster.workers[victim].url.removeprefix("http://")
        lost = owned_by(views, victim_id)
        survivors_before = {k: v for k, v in start_times(views).items() if k not in lost}
        killed_at = time.monotonic()
        cluster.workers[victim].signal(signal.SIGKILL)
        cluster.workers[victim].process.wait()  # type: ignore[union-attr]
        # Once the leader holds the lost tasks for the delay, they do not move before it
        # expires.
        wait_until(
            partial(scheduled_delay_ms, leader_url),
            DELAY_S,
            what="the leader to schedule the delayed rebalance",
            until=lambda remaining: remaining > 0,
        )
        during = cluster.tasks()
        assert all(
            v.state != "RUNNING" or v.worker_id == victim_id
            for v in during
            if (v.connector, v.task) in lost
        ), "lost tasks moved before the scheduled delay expired"
        assert unchanged(survivors_before, during), "a surviving task restarted"
        views = cluster.wait_at_rest(9)
        assert time.monotonic() - killed_at >= DELAY_S * 0.9
        assert unchanged(survivors_before, views)
        assert spread(views) <= 1

        # Bounce a worker inside the delay: it gets exactly its own tasks back at once.
        cluster.restart(victim).wait_ready(120)
        views = cluster.wait_at_rest(9)
        assert_balanced(views, 3)
        before = start_times(views)
        bounced_id = cluster.workers[victim].url.removeprefix("http://")
        own = owned_by(views, bounced_id)
        cluster.workers[victim].signal(signal.SIGKILL)
        cluster.workers[victim].process.wait()  # type: ignore[union-attr]
        cluster.restart(victim).wait_ready(120)
        first_view = cluster.workers_view(victim)
        mine = next(w for w in first_view["workers"] if w["id"] == bounced_id)
        assert {task_key(t) for t in mine["tasks"]} == own, "not handed back on its first join"
        views = cluster.wait_at_rest(9, timeout_s=DELAY_S * 3)
        assert owned_by(views, bounced_id) == own, "the bounced worker got other tasks"
        assert unchanged({k: v for k, v in before.items() if k not in own}, views)

        # Kill the leader: another worker leads and the cluster converges.
        leader = cluster.index_of(leader_url)
        cluster.workers[leader].signal(signal.SIGKILL)
        cluster.workers[leader].process.wait()  # type: ignore[union-attr]
        new_leader = wait_until(lambda: _new_leader(cluster, leader_url), 120, what="a new leader")
        assert new_leader != leader_url
        views = cluster.wait_at_rest(9, timeout_s=DELAY_S * 6)
        assert spread(views) <= 1
        # A worker coming back after a leader change is test_rolling_bounce's: it bounces
        # the leader too.

    for connector, tasks in (("alpha", 4), ("beta", 4), ("gamma", 1)):
        for task in range(tasks):
            seqs = committed_column(tmp_path / "out" / connector / f"task-{task}", "seq")
            assert seqs == list(range(len(seqs))), f"{connector}-{task}: gap or duplicate"
            assert seqs, f"{connector}-{task} wrote nothing"


def _new_leader(cluster: Cluster, old: str) -> str | None:
    for worker in cluster.alive():
        leader = cluster.workers_view(cluster.workers.index(worker))["leader"]
        if leader and leader != old:
            return str(leader)
    return None


def test_eager_cluster_restarts_every_task_on_every_rebalance(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    cluster = Cluster(
        broker.bootstrap_servers, tmp_path, size=3, settings=["connect.protocol=eager"]
    )
    with cluster.running():
        cluster.create("alpha", generator_config(tmp_path / "out" / "alpha", tasks=3))
        views = cluster.wait_converged(3)
        assert cluster.workers_view()["protocol_version"] == 0
        before = start_times(views)
        cluster.create("beta", generator_config(tmp_path / "out" / "beta", tasks=3))
        views = cluster.wait_converged(6)
        restarted = [k for k, started in before.items() if start_times(views)[k] != started]
        assert sorted(restarted) == sorted(before), "eager must restart every task"
