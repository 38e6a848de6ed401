"""The simulator drives the worker's own task machine (`herder.tasks.task_machine`): after a
KIP-415 trace at v3, in which tasks are handed over in the round that revokes them, each
worker's tasks are where their machine says, and a crash leaves none behind."""

from __future__ import annotations

import pytest

from herder.tasks.task_machine import TaskPhase
from tests.simulation.cluster import SimCluster
from tests.simulation.kip415 import TRACES
from tests.simulation.script import run_script
from tests.simulation.worker import Rebalancing, SimWorker


def phases_agree(worker: SimWorker) -> None:
    running = {item for item in worker.running if not isinstance(item, str)}
    assert {t for t, p in worker.tasks.phases.items() if p is TaskPhase.RUNNING} == running
    waiting = {t for t, p in worker.tasks.phases.items() if p is TaskPhase.AWAITING_RELEASE}
    assert waiting == worker.awaiting
    assert set(worker.tasks.phases) == running | worker.awaiting


@pytest.mark.parametrize("rebalancing", [Rebalancing.KIP_415, Rebalancing.IDENTITY_AWARE])
def test_each_task_is_where_its_machine_says_after_a_hand_over(rebalancing: Rebalancing) -> None:
    cluster = SimCluster(rebalancing, max_delay_ms=30_000)
    run_script(cluster, TRACES["non-first members join"])
    tasks = [len(w.tasks.phases) for w in cluster.workers.values()]
    assert tasks == [1, 1, 1]
    for worker in cluster.workers.values():
        phases_agree(worker)
    cluster.workers["W1"].crash()
    assert not cluster.workers["W1"].tasks.phases
    phases_agree(cluster.workers["W1"])
