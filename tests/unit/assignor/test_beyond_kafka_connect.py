"""Where the assignor goes further than Kafka Connect's IncrementalCooperativeAssignor."""

from __future__ import annotations

from herder.assignor import HandedOver, IncrementalCooperativeAssignor
from protocol.messages import Allocation
from tests.unit.assignor.group import Group, is_balanced, items, spread

DELAY = 60_000


def group_of(counts: dict[str, int], members: list[str], identity_aware: bool = True) -> Group:
    group = Group(IncrementalCooperativeAssignor(DELAY, identity_aware), dict(counts))
    for member in members:
        group.join(member)
    group.settle()
    return group


def per_connector_spread(group: Group, connector: str) -> int:
    return spread(
        sum(1 for t in a.tasks if t.connector == connector) for a in group.running.values()
    )


def test_tasks_of_one_connector_are_spread_even_when_totals_are_already_balanced() -> None:
    group = Group(IncrementalCooperativeAssignor(DELAY), {"A": 4, "B": 4})
    group.join("W1")
    group.join("W2")
    group.running["W1"] = items("A", "A-0", "A-1", "A-2", "A-3")
    group.running["W2"] = items("B", "B-0", "B-1", "B-2", "B-3")
    group.settle()
    assert per_connector_spread(group, "A") == 0
    assert per_connector_spread(group, "B") == 0
    assert is_balanced(group.running)


def test_a_joining_worker_gets_tasks_of_every_connector_not_a_pile_of_one() -> None:
    group = group_of({"A": 6, "B": 6, "C": 6}, ["W1", "W2", "W3"])
    group.join("W4")
    group.settle(at_ms=1_000)
    assert all(per_connector_spread(group, c) <= 1 for c in "ABC")
    assert is_balanced(group.running)


def test_a_worker_leaving_for_good_is_revoked_now_and_its_work_assigned_next_round() -> None:
    group = group_of({"A": 6, "B": 3}, ["W1", "W2", "W3"])
    leaving = group.running["W2"]
    group.leaving.add("W2")
    first = group.step(at_ms=1_000)
    assert first["W2"].revoked == leaving
    assert all(a.assigned.is_empty() and a.delay_ms == 0 for a in first.values())
    second = group.step(at_ms=1_001)
    handed = Allocation()
    for answer in second.values():
        assert answer.revoked.is_empty() and answer.delay_ms == 0
        handed = handed.union(answer.assigned)
    assert handed == leaving
    assert second["W2"].assigned.is_empty()


def test_work_of_a_leaver_that_already_left_is_still_placed_without_delay() -> None:
    group = group_of({"A": 6}, ["W1", "W2", "W3"])
    group.leaving.add("W2")
    group.step(at_ms=1_000)
    group.crash("W2")
    answers = group.step(at_ms=1_001)
    assert all(a.delay_ms == 0 for a in answers.values())
    assert sum(a.assigned.size() for a in answers.values()) == 2
    assert is_balanced(group.running)


def test_adding_a_connector_to_a_stable_group_moves_nothing_else() -> None:
    group = group_of({"A": 10, "B": 10, "C": 10}, ["W1", "W2", "W3"])
    for tasks in (1, 2, 3, 5, 7):
        name = f"N{tasks}"
        group.task_counts[name] = tasks
        answers = group.step()
        assert all(a.revoked.is_empty() for a in answers.values())
        assigned = Allocation()
        for answer in answers.values():
            assigned = assigned.union(answer.assigned)
        assert assigned.connectors == {name}
        assert {t.connector for t in assigned.tasks} == {name}
        assert is_balanced(group.running)


def test_a_rebalance_caused_by_an_unrelated_member_rejoining_moves_nothing() -> None:
    group = group_of({"A": 7, "B": 5}, ["W1", "W2", "W3"])
    before = dict(group.running)
    answers = group.step(at_ms=50_000)
    assert all(a.assigned.is_empty() and a.revoked.is_empty() for a in answers.values())
    assert group.running == before


def test_a_joining_worker_takes_only_its_share() -> None:
    group = group_of({"A": 9, "B": 9, "C": 9}, ["W1", "W2", "W3"])
    group.join("W4")
    answers = group.step(at_ms=1_000)
    revoked = sum(a.revoked.size() for a in answers.values())
    group.settle(at_ms=1_000)
    assert revoked == group.running["W4"].size()


def test_a_bounced_worker_gets_exactly_its_items_back_at_once() -> None:
    group = group_of({"A": 6, "B": 3}, ["W1", "W2", "W3"])
    own = group.running["W2"]
    group.crash("W2")
    group.step(at_ms=1_000)
    group.join("W2-again", identity="W2")
    back = group.step(at_ms=15_000)
    assert back["W2-again"].assigned == own
    assert all(a.delay_ms == 0 and a.revoked.is_empty() for a in back.values())
    assert all(a.assigned.is_empty() for m, a in back.items() if m != "W2-again")


def test_without_identities_a_bounced_worker_waits_for_the_delay_like_kip_415() -> None:
    group = group_of({"A": 6, "B": 3}, ["W1", "W2", "W3"], identity_aware=False)
    own = group.running["W2"]
    group.crash("W2")
    group.step(at_ms=1_000)
    group.join("W2-again", identity="W2")
    back = group.step(at_ms=15_000)
    assert back["W2-again"].assigned.is_empty()
    assert {a.delay_ms for a in back.values()} == {DELAY - 14_000}
    expired = group.step(at_ms=1_000 + DELAY)
    assert expired["W2-again"].assigned == own


def test_one_returning_worker_ends_only_its_own_wait() -> None:
    group = group_of({"A": 8}, ["W1", "W2", "W3", "W4"])
    own = group.running["W2"]
    group.crash("W2")
    group.crash("W3")
    group.step(at_ms=1_000)
    group.join("W2-again", identity="W2")
    back = group.step(at_ms=15_000)
    assert back["W2-again"].assigned == own
    assert {a.delay_ms for a in back.values()} == {DELAY - 14_000}


def test_a_version_0_round_is_answered_eagerly() -> None:
    group = Group(IncrementalCooperativeAssignor(DELAY), {"A": 4}, version=0)
    group.join("W1")
    group.join("W2")
    answers = group.step()
    assert sum(len(a.assigned.tasks) for a in answers.values()) == 4
    assert all(a.version == 0 and a.revoked.is_empty() for a in answers.values())


def test_a_worker_restarted_before_its_old_member_expired_gets_its_items_back_at_once() -> None:
    group = group_of({"A": 6, "B": 3}, ["W1", "W2", "W3"])
    own = group.running["W2"]
    group.join("W2-again", identity="W2")
    back = group.step(at_ms=2_000)
    assert back["W2-again"].assigned == own
    assert back["W2"].revoked == own
    assert all(a.delay_ms == 0 for a in back.values())
    assert all(a.assigned.is_empty() and a.revoked.is_empty() for a in (back["W1"], back["W3"]))
    still_listed = group.step(at_ms=4_000)
    assert all(a.assigned.is_empty() and a.revoked.is_empty() for a in still_listed.values())
    group.crash("W2")
    assert all(a.assigned.is_empty() and a.revoked.is_empty() for a in group.step().values())


def test_the_dead_incarnation_is_recognised_even_when_its_stale_metadata_reports_nothing() -> None:
    group = group_of({"A": 6, "B": 3}, ["W1", "W2", "W3"])
    own = group.running["W2"]
    group.join("W2-again", identity="W2")
    back = group.round(at_ms=2_000, reports={"W2": Allocation()})
    assert back["W2-again"].assigned == own
    assert back["W2"].assigned.is_empty()


def test_without_identities_the_dead_member_keeps_its_items_until_it_expires() -> None:
    group = group_of({"A": 6, "B": 3}, ["W1", "W2", "W3"], identity_aware=False)
    own = group.running["W2"]
    group.join("W2-again", identity="W2")
    back = group.step(at_ms=2_000)
    assert back["W2"].revoked.is_empty()
    assert group.running["W2"] == own


def handed_over_and_gone(group: Group, member: str) -> Allocation:
    """`member` announces it leaves, hands its work over (at 1 s) and is gone (at 2 s);
    what it ran before."""
    own = group.running[member]
    group.leaving.add(member)
    group.settle(at_ms=1_000)
    group.crash(member)
    group.settle(at_ms=2_000)
    return own


def test_a_worker_back_from_a_hand_off_gets_its_own_tasks_back() -> None:
    group = group_of({"A": 6, "B": 6}, ["W1", "W2", "W3"])
    own = handed_over_and_gone(group, "W2")
    temporary = {m: a for m, a in group.running.items()}
    group.join("W2-again", identity="W2")
    revoking = group.step(at_ms=10_000)
    assert revoking["W2-again"].assigned.is_empty()
    assert {t for a in revoking.values() for t in a.revoked.tasks} == own.tasks
    back = group.step(at_ms=10_001)
    assert back["W2-again"].assigned.tasks == own.tasks
    assert all(a.revoked.is_empty() for a in back.values())
    group.settle(at_ms=10_002)
    assert group.running["W2-again"].tasks == own.tasks
    assert all(group.running[m].tasks <= temporary[m].tasks for m in ("W1", "W3"))


def test_a_hand_off_is_forgotten_once_the_delay_has_passed() -> None:
    group = group_of({"A": 6}, ["W1", "W2", "W3"])
    handed_over_and_gone(group, "W2")
    group.join("W2-again", identity="W2")
    group.settle(at_ms=2_000 + DELAY)
    assert is_balanced(group.running)
    assert group.running["W2-again"].size() == 2


def test_each_task_stops_at_most_twice_in_a_rolling_bounce_with_hand_offs() -> None:
    group = group_of({"A": 12}, ["W1", "W2", "W3"])
    stops = {t: 0 for a in group.running.values() for t in a.tasks}
    before = {m: a.tasks for m, a in group.running.items()}
    members = {"W1": "W1", "W2": "W2", "W3": "W3"}
    now = 1_000
    for worker in ("W3", "W2", "W1"):
        member = members[worker]
        group.leaving.add(member)
        for _ in range(5):
            now += 1
            answers = group.step(at_ms=now)
            for answer in answers.values():
                for task in answer.revoked.tasks:
                    stops[task] += 1
        group.leaving.discard(member)
        group.crash(member)
        members[worker] = f"{worker}-again"
        group.join(members[worker], identity=worker)
        for _ in range(5):
            now += 1
            for answer in group.step(at_ms=now).values():
                for task in answer.revoked.tasks:
                    stops[task] += 1
    assert max(stops.values()) <= 2
    assert {w: group.running[m].tasks for w, m in members.items()} == before


def test_a_new_leader_returns_tasks_handed_over_under_its_predecessor() -> None:
    group = group_of({"A": 6, "B": 6}, ["W1", "W2", "W3"])
    own = handed_over_and_gone(group, "W2")
    group.assignor = IncrementalCooperativeAssignor(DELAY)
    group.handed_over = {
        "http://W2:8083": HandedOver(
            1_000 + DELAY,
            {c: frozenset(t.task for t in own.tasks if t.connector == c) for c in "AB"},
        )
    }
    group.join("W2-again", identity="W2")
    group.settle(at_ms=10_000)
    assert group.running["W2-again"].tasks == own.tasks
