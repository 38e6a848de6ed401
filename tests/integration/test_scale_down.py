"""Scale-down: a worker that announces it leaves for good has its tasks moved within one
rebalance round, not after `scheduled.rebalance.max.delay.ms`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster, generator_config
from tests.support.file_sink import committed_column
from tests.support.polling import wait_until

pytestmark = pytest.mark.integration

DELAY_S = 300


def test_announced_leave_hands_work_over_without_the_delay(
    each_broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """In the Tansu smoke set: a cooperative cluster on the embedded broker too.

    Once the leaving worker answers "handed over", the status it shows has none of its
    stopped tasks RUNNING there; the staying worker, whose own reader may be a fetch
    behind, shows them all RUNNING on itself well within half the delay. (Taking any
    live worker as an owner, as `wait_converged` does, let a status read a moment after
    the answer pass with tasks still shown on the worker that had just stopped them.)"""
    output = tmp_path / "out"
    cluster = Cluster(
        each_broker.bootstrap_servers,
        tmp_path,
        size=2,
        settings=[f"scheduled.rebalance.max.delay.ms={DELAY_S * 1000}"],
    )
    with cluster.running():
        cluster.create("alpha", generator_config(output, tasks=4))
        views = cluster.wait_converged(4)
        leaving, staying = cluster.workers[1], cluster.workers[0]
        leaving_id = leaving.url.removeprefix("http://")
        assert any(v.worker_id == leaving_id for v in views)

        answer = httpx.post(f"{leaving.url}/admin/leave-group", timeout=120)
        assert answer.status_code == 200, answer.text
        assert answer.json()["handed_over"] is True
        assert answer.json()["running_tasks"] == 0
        shown = httpx.get(f"{leaving.url}/connectors/alpha/status", timeout=10).json()
        still_here = [
            t["id"]
            for t in shown["tasks"]
            if t["state"] == "RUNNING" and t["worker_id"] == leaving_id
        ]
        assert still_here == [], "the status must not lag the answer: stopped tasks shown RUNNING"

        staying_id = staying.url.removeprefix("http://")
        wait_until(
            cluster.tasks,
            DELAY_S / 2,
            what="every task RUNNING on the staying worker, well within the delay",
            until=lambda views: (
                len(views) == 4
                and all(v.state == "RUNNING" and v.worker_id == staying_id for v in views)
            ),
        )
        assert leaving.stop() == 0
        cluster.wait_converged(4)

    for task in range(4):
        seqs = committed_column(output / f"task-{task}", "seq")
        assert seqs, f"task {task} wrote nothing"
        assert seqs == list(range(len(seqs))), f"task {task}: gap or duplicate"
