"""KIP-415's migration plan on a real cluster: an eager cluster becomes cooperative in one
rolling bounce, with no further configuration change, and one worker switched back to
eager takes the whole group back to eager."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import httpx
import pytest

from protocol.versions import CURRENT_VERSION
from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster, generator_config, start_times
from tests.support.file_sink import committed_column
from tests.support.polling import wait_until

pytestmark = pytest.mark.integration

EAGER, COOPERATIVE = 0, CURRENT_VERSION
TASKS = [("alpha", task) for task in range(4)] + [("beta", task) for task in range(2)]


def test_rolling_upgrade_from_eager_to_cooperative_and_back(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    output = tmp_path / "out"
    cluster = Cluster(
        broker.bootstrap_servers, tmp_path, size=2, settings=["connect.protocol=eager"]
    )
    with cluster.running():
        cluster.create("alpha", generator_config(output / "alpha", tasks=4))
        cluster.wait_converged(4)
        assert cluster.workers_view()["protocol_version"] == EAGER
        refused = httpx.post(f"{cluster.workers[0].url}/admin/leave-group", timeout=30)
        assert refused.status_code == 409, refused.text
        assert "cannot announce a departure" in refused.json()["message"]

        for index in reversed(range(2)):
            # At rest, not merely converged: a worker that read alpha's task configs only
            # after it joined rejoins at once, and an eager rejoin first stops every task;
            # stopped in that second, a worker has nothing to hand off and says nothing.
            cluster.wait_at_rest(4)
            assert cluster.workers[index].stop() == 0
            assert "without a hand-off" in cluster.workers[index].log_text(), (
                "an eager group cannot hand work over: the worker waited for it anyway"
            )
            cluster.restart(index, ["connect.protocol=compatible"]).wait_ready(120)
        wait_until(
            lambda: all(
                cluster.workers_view(i)["protocol_version"] == COOPERATIVE for i in range(2)
            ),
            120,
            what="the group to run the cooperative protocol",
        )
        # At rest, not merely converged: the returning worker's share of alpha is still
        # moving to it when every task first runs somewhere.
        views = cluster.wait_at_rest(4)

        before = start_times(views)
        cluster.create("beta", generator_config(output / "beta", tasks=2))
        views = cluster.wait_converged(6)
        now = start_times(views)
        assert all(now[key] == started for key, started in before.items()), (
            "a cooperative group must not restart running tasks to add a connector"
        )

        assert cluster.workers[0].stop() == 0
        cluster.restart(0, ["connect.protocol=eager"]).wait_ready(120)
        wait_until(
            lambda: cluster.workers_view(1)["protocol_version"] == EAGER,
            120,
            what="one eager worker to take the group back to eager",
        )
        cluster.wait_converged(6)
        for connector, task in TASKS:
            wait_until(
                partial(committed_column, output / connector / f"task-{task}", "seq"),
                120,
                what=f"{connector}-{task} to commit a batch",
            )

    for connector, task in TASKS:
        seqs = committed_column(output / connector / f"task-{task}", "seq")
        assert seqs == list(range(len(seqs))), f"{connector}-{task}: gap or duplicate"
