"""Scale-down: a worker that announces it leaves for good has its tasks moved within one
rebalance round, not after `scheduled.rebalance.max.delay.ms`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster, generator_config
from tests.support.file_sink import committed_column

pytestmark = pytest.mark.integration

DELAY_S = 300


def test_announced_leave_hands_work_over_without_the_delay(
    each_broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """In the Tansu smoke set: a cooperative cluster on the embedded broker too."""
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

        views = cluster.wait_converged(4, timeout_s=DELAY_S / 2)
        assert all(v.worker_id == staying.url.removeprefix("http://") for v in views)
        assert leaving.stop() == 0
        cluster.wait_converged(4)

    for task in range(4):
        seqs = committed_column(output / f"task-{task}", "seq")
        assert seqs, f"task {task} wrote nothing"
        assert seqs == list(range(len(seqs))), f"task {task}: gap or duplicate"
