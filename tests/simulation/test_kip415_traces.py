"""Every scenario trace of KIP-415, replayed in the simulator with the same outcome shape.

`assigned` on the wire is incremental (what to start); the KIP's traces list a member's
whole assignment, which here is what it reported minus revoked plus assigned.
"""

from __future__ import annotations

import pytest

from protocol.messages import Allocation
from tests.simulation.cluster import RoundRecord, SimCluster
from tests.simulation.coordinator import Timeouts
from tests.simulation.kip415 import THREE_WORKERS, TRACES
from tests.simulation.script import run_script
from tests.simulation.worker import Rebalancing

COOPERATIVE = [Rebalancing.KIP_415, Rebalancing.IDENTITY_AWARE]
DELAY = 30_000


def rounds_of(script: str, cluster: SimCluster) -> list[RoundRecord]:
    return [r for step in run_script(cluster, script) for r in step.rounds]


def held_by(cluster: SimCluster, worker: str) -> Allocation:
    items = cluster.workers[worker].running
    return Allocation.of(
        (i for i in items if isinstance(i, str)), (i for i in items if not isinstance(i, str))
    )


def started_in(round: RoundRecord, *workers: str) -> Allocation:
    found = Allocation()
    for worker in workers:
        found = found.union(round.answers[worker].assigned)
    return found


def quiet_answers(round: RoundRecord, delay_ms: int) -> bool:
    """Nobody starts or stops anything; everyone is told the same delay."""
    return all(
        a.assigned.is_empty() and a.revoked.is_empty() and a.delay_ms == delay_ms
        for a in round.answers.values()
    )


def resolves(expired: RoundRecord, deadline_ms: int) -> bool:
    """The round after the delay: the leader rejoins at the deadline and the others hear
    of the rebalance from their next heartbeat, as the herder's lifecycle has it."""
    return deadline_ms <= expired.at_ms <= deadline_ms + Timeouts().heartbeat_interval_ms


def three_settled_workers(rebalancing: Rebalancing) -> SimCluster:
    cluster = SimCluster(rebalancing, max_delay_ms=DELAY)
    run_script(cluster, THREE_WORKERS)
    return cluster


@pytest.mark.parametrize("rebalancing", COOPERATIVE)
def test_first_member_joins_and_gets_everything(rebalancing: Rebalancing) -> None:
    cluster = SimCluster(rebalancing, max_delay_ms=DELAY)
    (only,) = run_script(cluster, TRACES["first member joins"])[-1].rounds
    assert only.leader == "W1"
    answer = only.answers["W1"]
    assert answer.assigned == items_of(cluster)
    assert answer.revoked.is_empty() and answer.delay_ms == 0


@pytest.mark.parametrize("rebalancing", COOPERATIVE)
def test_non_first_members_join_and_the_leader_revokes_then_hands_over(
    rebalancing: Rebalancing,
) -> None:
    """KIP-415's own protocol (v2 here): the revoked work is handed over a round later."""
    cluster = SimCluster(rebalancing, max_delay_ms=DELAY, release=2)
    revoking, handing = run_script(cluster, TRACES["non-first members join"])[-1].rounds
    assert revoking.leader == handing.leader == "W1"
    assert revoking.reported["W1"] == items_of(cluster)
    w1 = revoking.answers["W1"]
    assert w1.assigned.is_empty()
    assert (len(w1.revoked.connectors), len(w1.revoked.tasks)) == (1, 2)
    assert started_in(revoking, "W2", "W3").is_empty()
    assert all(a.delay_ms == 0 for a in revoking.answers.values())
    assert all(a.revoked.is_empty() and a.delay_ms == 0 for a in handing.answers.values())
    assert handing.answers["W1"].assigned.is_empty()
    assert started_in(handing, "W2", "W3") == w1.revoked
    assert sorted(len(cluster.workers[w].running) for w in ("W1", "W2", "W3")) == [1, 2, 2]


@pytest.mark.parametrize("rebalancing", COOPERATIVE)
def test_from_v3_the_revoked_tasks_are_handed_over_in_the_revoking_round(
    rebalancing: Rebalancing,
) -> None:
    """The same trace at v3: the tasks W1 gives up go to W2 and W3 in the round that
    revokes them, each to start once W1 has stopped it; the connector still moves a
    round later, and nothing ever runs twice (the ledger checks every start)."""
    cluster = SimCluster(rebalancing, max_delay_ms=DELAY)
    revoking, handing = run_script(cluster, TRACES["non-first members join"])[-1].rounds
    w1 = revoking.answers["W1"]
    assert (len(w1.revoked.connectors), len(w1.revoked.tasks)) == (1, 2)
    handed = started_in(revoking, "W2", "W3")
    assert handed.tasks == w1.revoked.tasks and not handed.connectors
    awaiting = [revoking.answers[w].awaiting_release for w in ("W2", "W3")]
    assert awaiting[0].union(awaiting[1]) == handed
    assert started_in(handing, "W2", "W3") == Allocation(w1.revoked.connectors)
    assert sorted(len(cluster.workers[w].running) for w in ("W1", "W2", "W3")) == [1, 2, 2]


@pytest.mark.parametrize("rebalancing", COOPERATIVE)
def test_worker_leaves_and_its_work_waits_for_the_delay(rebalancing: Rebalancing) -> None:
    cluster = three_settled_workers(rebalancing)
    lost = held_by(cluster, "W2")
    waiting, expired = rounds_of("leave W2\nsettle", cluster)
    assert set(waiting.answers) == {"W1", "W3"}
    assert quiet_answers(waiting, DELAY)
    assert resolves(expired, waiting.at_ms + DELAY)
    assert all(a.revoked.is_empty() and a.delay_ms == 0 for a in expired.answers.values())
    assert started_in(expired, "W1", "W3") == lost


def test_worker_bounces_and_gets_its_work_when_the_delay_expires_under_kip_415() -> None:
    cluster = three_settled_workers(Rebalancing.KIP_415)
    own = held_by(cluster, "W2")
    waiting, returned, expired = rounds_of("leave W2\nadvance 10s\njoin W2\nsettle", cluster)
    assert quiet_answers(waiting, DELAY)
    assert quiet_answers(returned, DELAY - (returned.at_ms - waiting.at_ms))
    assert resolves(expired, waiting.at_ms + DELAY)
    assert expired.answers["W2"].assigned == own
    assert started_in(expired, "W1", "W3").is_empty()
    assert all(a.revoked.is_empty() for a in expired.answers.values())


def test_worker_bounces_and_gets_its_work_back_at_once_when_identity_aware() -> None:
    cluster = three_settled_workers(Rebalancing.IDENTITY_AWARE)
    own = held_by(cluster, "W2")
    waiting, returned = rounds_of("leave W2\nadvance 10s\njoin W2\nsettle", cluster)
    assert quiet_answers(waiting, DELAY)
    assert returned.answers["W2"].assigned == own
    assert all(a.delay_ms == 0 and a.revoked.is_empty() for a in returned.answers.values())


@pytest.mark.parametrize("rebalancing", COOPERATIVE)
def test_leader_leaves_and_the_new_leader_assigns_its_work_at_once(
    rebalancing: Rebalancing,
) -> None:
    cluster = three_settled_workers(rebalancing)
    lost = held_by(cluster, "W1")
    (only,) = rounds_of("leave W1\nsettle", cluster)
    assert only.leader in {"W2", "W3"}
    assert all(a.revoked.is_empty() and a.delay_ms == 0 for a in only.answers.values())
    assert started_in(only, "W2", "W3") == lost


def test_leader_bounces_during_a_delay_and_the_new_leader_honours_it_under_kip_415() -> None:
    cluster = three_settled_workers(Rebalancing.KIP_415)
    kept = held_by(cluster, "W3")
    script = "leave W2\nadvance 5s\njoin W2\nadvance 5s\nleave W1\nadvance 5s\njoin W1\nsettle"
    w2_left, w2_back, w1_left, w1_back, expired = rounds_of(script, cluster)
    deadline = w2_left.at_ms + DELAY
    assert w2_left.leader == w2_back.leader == "W1"
    assert w1_left.leader != "W1"
    assert w1_back.leader == expired.leader == w1_left.leader
    for waiting in (w2_left, w2_back, w1_left, w1_back):
        assert quiet_answers(waiting, deadline - waiting.at_ms)
    assert resolves(expired, deadline)
    assert expired.answers["W3"].assigned.is_empty()
    assert held_by(cluster, "W3") == kept
    handed = started_in(expired, "W1", "W2")
    assert handed.union(kept) == items_of(cluster)
    assert not expired.answers["W1"].assigned.is_empty()
    assert not expired.answers["W2"].assigned.is_empty()


def test_leader_bounces_with_identities_and_nothing_waits() -> None:
    cluster = three_settled_workers(Rebalancing.IDENTITY_AWARE)
    script = "leave W2\nadvance 5s\njoin W2\nadvance 5s\nleave W1\nadvance 5s\njoin W1\nsettle"
    rounds = rounds_of(script, cluster)
    assert rounds[1].answers["W2"].assigned != Allocation()
    assert all(a.delay_ms == 0 for r in rounds[1:] for a in r.answers.values())


def items_of(cluster: SimCluster) -> Allocation:
    configured = cluster.config.items()
    return Allocation.of(
        (i for i in configured if isinstance(i, str)),
        (i for i in configured if not isinstance(i, str)),
    )
