"""The same scenarios under the eager protocol cost at least as many restarts."""

from __future__ import annotations

import pytest

from tests.simulation.cluster import Costs, SimCluster
from tests.simulation.kip415 import TRACES
from tests.simulation.script import run_script
from tests.simulation.worker import Rebalancing

STABLE_GROUP = """
join W1 W2 W3
connector A 10
connector B 10
connector C 10
settle
"""


def costs_of(script: str, rebalancing: Rebalancing) -> Costs:
    cluster = SimCluster(rebalancing)
    run_script(cluster, script)
    return cluster.costs()


@pytest.mark.parametrize("trace", sorted(TRACES))
def test_eager_stops_at_least_as_many_items_as_cooperative(trace: str) -> None:
    costs = {mode: costs_of(TRACES[trace], mode) for mode in Rebalancing}
    eager = costs[Rebalancing.EAGER]
    for mode in (Rebalancing.KIP_415, Rebalancing.IDENTITY_AWARE):
        assert eager.stops >= costs[mode].stops
        if trace != "first member joins":
            assert eager.stops > costs[mode].stops


@pytest.mark.parametrize(
    ("rebalancing", "expected_task_stops"),
    [(Rebalancing.EAGER, 30), (Rebalancing.KIP_415, 0), (Rebalancing.IDENTITY_AWARE, 0)],
)
def test_adding_a_connector_to_a_stable_group_of_30_running_tasks(
    rebalancing: Rebalancing, expected_task_stops: int
) -> None:
    cluster = SimCluster(rebalancing)
    run_script(cluster, STABLE_GROUP)
    assert len(cluster.ledger.owners) == 33
    before = cluster.costs()
    run_script(cluster, "connector D 3\nsettle")
    assert cluster.costs().task_stops - before.task_stops == expected_task_stops
    assert len(cluster.ledger.owners) == 37


def test_a_rolling_bounce_costs_least_downtime_when_identity_aware() -> None:
    script = STABLE_GROUP + "".join(f"bounce W{n} 5s\nadvance 20s\n" for n in (1, 2, 3))
    downtime = {mode: costs_of(script + "settle", mode).downtime_s for mode in Rebalancing}
    assert downtime[Rebalancing.IDENTITY_AWARE] < downtime[Rebalancing.KIP_415]
    assert downtime[Rebalancing.IDENTITY_AWARE] < downtime[Rebalancing.EAGER]
