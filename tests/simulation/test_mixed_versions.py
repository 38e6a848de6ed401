"""A group whose workers speak different protocol versions, as in a rolling upgrade.

The versions are the real negotiation's (`protocol.negotiation` through the leader
planner and the apply core): one eager worker takes the whole group down to v0, first
through a round that hands out nothing (cooperative members still run their work), and
once it is gone the group goes back up to v2. The ledger checks at every start that no
item runs twice; `settle` checks that the group converges.
"""

from __future__ import annotations

import pytest

from tests.simulation.cluster import RoundRecord, SimCluster
from tests.simulation.script import run_script
from tests.simulation.worker import Rebalancing

COOPERATIVE = ["W1", "W2", "W3"]


def versions(round: RoundRecord) -> set[int]:
    return {answer.version for answer in round.answers.values()}


def group_versions(cluster: SimCluster) -> set[int]:
    return {w.group_version for w in cluster.workers.values() if w.alive}


def test_an_eager_worker_takes_a_cooperative_group_down_and_back_up() -> None:
    cluster = SimCluster(Rebalancing.IDENTITY_AWARE)
    run_script(cluster, f"join {' '.join(COOPERATIVE)}\nconnector A 6\nconnector B 2\nsettle")
    before = len(cluster.rounds)

    cluster.join("W4", rebalancing=Rebalancing.EAGER)
    cluster.settle()
    emptied, *eager = cluster.rounds[before:]
    assert versions(emptied) == {0}
    assert all(a.assigned.is_empty() for a in emptied.answers.values())
    assert all(not emptied.reported[w].is_empty() for w in COOPERATIVE)
    assert eager and all(versions(r) == {0} for r in eager)
    assert group_versions(cluster) == {0}
    assert len(cluster.allocations()) == 4

    after_eager = len(cluster.rounds)
    run_script(cluster, "leave W4\nsettle")
    assert versions(cluster.rounds[after_eager]) == {2}
    assert group_versions(cluster) == {2}
    assert {w.version for w in cluster.workers.values() if w.alive} == {2}


@pytest.mark.parametrize("eager_leads", [True, False])
def test_a_mixed_group_converges_through_membership_changes(eager_leads: bool) -> None:
    cluster = SimCluster(Rebalancing.KIP_415, max_delay_ms=10_000)
    if eager_leads:
        cluster.join("W0", rebalancing=Rebalancing.EAGER)
    run_script(cluster, f"join {' '.join(COOPERATIVE)}\nconnector A 5\nsettle")
    if not eager_leads:
        cluster.join("W0", rebalancing=Rebalancing.EAGER)
    assert cluster.rounds[0].leader == ("W0" if eager_leads else "W1")
    run_script(
        cluster,
        "settle\nbounce W2 5s\nconnector B 3\nsettle\ncrash W3\nsettle\nretire W0\nsettle",
    )
    *mixed, last = cluster.rounds
    assert all(versions(r) == {0} for r in mixed if "W0" in r.answers)
    assert versions(last) == {2}
    assert group_versions(cluster) == {2}
