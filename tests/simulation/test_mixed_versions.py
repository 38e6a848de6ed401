"""A group whose workers speak different protocol versions, as in a rolling upgrade.

The versions are the real negotiation's (`protocol.negotiation` through the leader
planner and the apply core): one eager worker takes the whole group down to v0, first
through a round that hands out nothing (cooperative members still run their work), and
once it is gone the group goes back up to the newest version. The ledger checks at every
start that no item runs twice; `settle` checks that the group converges.
"""

from __future__ import annotations

import pytest

from protocol.versions import CURRENT_VERSION
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
    assert versions(cluster.rounds[after_eager]) == {CURRENT_VERSION}
    assert group_versions(cluster) == {CURRENT_VERSION}
    assert {w.version for w in cluster.workers.values() if w.alive} == {CURRENT_VERSION}


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
    assert versions(last) == {CURRENT_VERSION}
    assert group_versions(cluster) == {CURRENT_VERSION}


def test_one_worker_of_the_previous_release_keeps_hand_overs_in_two_rounds() -> None:
    """A v2 worker cannot wait for a release, so while it is in the group no task is
    assigned in the round that revokes it; once it is gone, tasks move in one round."""
    cluster = SimCluster(Rebalancing.IDENTITY_AWARE)
    run_script(cluster, "join W1\nconnector A 6\nsettle")
    before_v2 = len(cluster.rounds)
    cluster.join("W2", release=2)
    cluster.settle()
    with_v2 = cluster.rounds[before_v2:]
    assert len(with_v2) >= 2 and all(versions(r) == {2} for r in with_v2)
    assert all(a.awaiting_release.is_empty() for r in with_v2 for a in r.answers.values())
    assert len(cluster.workers["W2"].running) == 3

    after_v2 = len(cluster.rounds)
    run_script(cluster, "leave W2\nsettle\njoin W3\nsettle")
    later = cluster.rounds[after_v2:]
    assert versions(later[-1]) == {CURRENT_VERSION}
    assert any(not a.awaiting_release.is_empty() for r in later for a in r.answers.values())
