"""The incremental cooperative assignor's rules, one named test each (KIP-415 behaviour)."""

from __future__ import annotations

from herder.assignor import IncrementalCooperativeAssignor
from protocol.messages import Allocation, AssignmentError
from tests.unit.assignor.group import Group, is_balanced, items

DELAY = 60_000


def settled_group(counts: dict[str, int], members: int = 3, delay: int = DELAY) -> Group:
    group = Group(IncrementalCooperativeAssignor(delay), dict(counts))
    for n in range(1, members + 1):
        group.join(f"W{n}")
    group.settle()
    assert is_balanced(group.running)
    return group


def everything_assigned_once(group: Group) -> bool:
    owners = group.owners()
    configured = group.configured()
    return set(owners) == {*configured.connectors, *configured.tasks} and all(
        len(holders) == 1 for holders in owners.values()
    )


def test_new_connectors_and_tasks_go_to_the_least_loaded_workers_at_once() -> None:
    group = settled_group({"A": 4})
    before = {m: len(a.tasks) for m, a in group.running.items()}
    lightest = {m for m, n in before.items() if n == min(before.values())}
    group.task_counts["B"] = 2
    answers = group.step()
    receivers = {m for m, a in answers.items() if a.assigned.tasks}
    assert receivers == lightest
    assert all(a.revoked.is_empty() and a.delay_ms == 0 for a in answers.values())
    assert everything_assigned_once(group)


def test_deleted_items_are_revoked_from_their_owners() -> None:
    group = settled_group({"A": 3, "B": 3})
    owners = group.owners()
    del group.task_counts["B"]
    group.task_counts["A"] = 2
    answers = group.step()
    gone = {"B", *items("B-0", "B-1", "B-2", "A-2").tasks}
    for member, answer in answers.items():
        revoked = {*answer.revoked.connectors, *answer.revoked.tasks}
        assert revoked == {item for item in gone if owners[item] == [member]}
        assert answer.assigned.is_empty()
    assert everything_assigned_once(group)


def test_duplicates_are_revoked_from_both_and_replaced_in_the_next_round() -> None:
    group = settled_group({"A": 4}, members=2)
    shared = next(iter(group.running["W1"].tasks))
    w2 = group.running["W2"]
    answers = group.round(reports={"W2": Allocation(w2.connectors, w2.tasks | {shared})})
    assert shared in answers["W1"].revoked.tasks
    assert shared in answers["W2"].revoked.tasks
    assert all(shared not in a.assigned.tasks for a in answers.values())
    group.apply(answers)
    answers = group.step()
    assert [m for m, a in answers.items() if shared in a.assigned.tasks] != []
    assert all(a.delay_ms == 0 for a in answers.values())
    assert everything_assigned_once(group)


def test_lost_items_wait_for_the_delay_and_later_rounds_send_the_remaining_time() -> None:
    group = settled_group({"A": 6})
    lost = group.running["W2"]
    group.crash("W2")
    first = group.step(at_ms=1_000)
    assert {a.delay_ms for a in first.values()} == {DELAY}
    assert all(a.assigned.is_empty() and a.revoked.is_empty() for a in first.values())
    later = group.step(at_ms=21_000)
    assert {a.delay_ms for a in later.values()} == {DELAY - 20_000}
    assert all(a.assigned.is_empty() for a in later.values())
    expired = group.step(at_ms=1_000 + DELAY)
    handed = Allocation()
    for answer in expired.values():
        handed = handed.union(answer.assigned)
        assert answer.delay_ms == 0
    assert handed == lost
    assert everything_assigned_once(group)


def test_a_worker_joining_empty_during_the_delay_is_a_candidate_and_gets_the_lost_items() -> None:
    group = settled_group({"A": 6, "B": 3})
    lost = group.running["W2"]
    group.crash("W2")
    group.step(at_ms=1_000)
    group.join("W4")
    during = group.step(at_ms=10_000)
    assert during["W4"].assigned.is_empty()
    assert during["W4"].delay_ms == DELAY - 9_000
    expired = group.step(at_ms=1_000 + DELAY)
    assert expired["W4"].assigned == lost
    assert all(a.assigned.is_empty() for m, a in expired.items() if m != "W4")
    assert is_balanced(group.running)


def test_lost_items_without_a_candidate_are_redistributed_by_load() -> None:
    group = settled_group({"A": 6, "B": 3})
    group.crash("W2")
    group.step(at_ms=1_000)
    group.step(at_ms=1_000 + DELAY)
    group.settle(at_ms=1_000 + DELAY)
    assert everything_assigned_once(group)
    assert is_balanced(group.running)


def test_a_second_loss_inside_the_window_does_not_extend_the_deadline() -> None:
    group = settled_group({"A": 8}, members=4)
    group.crash("W2")
    group.step(at_ms=1_000)
    group.crash("W3")
    second = group.step(at_ms=20_000)
    assert {a.delay_ms for a in second.values()} == {DELAY - 19_000}
    expired = group.step(at_ms=1_000 + DELAY)
    assert all(a.delay_ms == 0 for a in expired.values())
    assert everything_assigned_once(group)


def test_zero_max_delay_reassigns_lost_items_immediately() -> None:
    group = settled_group({"A": 6}, delay=0)
    group.crash("W2")
    answers = group.step(at_ms=1_000)
    assert all(a.delay_ms == 0 for a in answers.values())
    assert everything_assigned_once(group)


def test_a_follower_that_missed_its_assignment_gets_its_items_again_without_delay() -> None:
    group = settled_group({"A": 4}, members=2)
    group.task_counts["B"] = 2
    answers = group.round()
    missed = answers["W2"].assigned
    assert not missed.is_empty()
    group.apply(answers, skip={"W2"})
    again = group.step()
    assert again["W2"].assigned == missed
    assert all(a.delay_ms == 0 for a in again.values())
    assert everything_assigned_once(group)


def test_a_leader_whose_own_sync_failed_forgets_its_previous_round() -> None:
    group = settled_group({"A": 6})
    group.task_counts["B"] = 3
    answers = group.round()
    group.apply(answers, skip={"W1"})
    group.assignor.forget()
    group.crash("W3")
    after = group.step()
    assert all(a.delay_ms == 0 for a in after.values())
    assert everything_assigned_once(group)


def test_no_balancing_revocations_while_a_delay_is_active() -> None:
    group = settled_group({"A": 9})
    group.crash("W3")
    group.step(at_ms=1_000)
    group.join("W4")
    group.join("W5")
    during = group.step(at_ms=5_000)
    assert all(a.revoked.is_empty() for a in during.values())
    group.step(at_ms=1_000 + DELAY)
    group.settle(at_ms=1_000 + DELAY)
    assert is_balanced(group.running)
    assert everything_assigned_once(group)


def test_consecutive_revoking_rounds_back_off_exponentially() -> None:
    group = Group(IncrementalCooperativeAssignor(DELAY), {"A": 60})
    group.join("W1")
    group.step()
    group.join("W2")
    at = 10_000
    assert any(not a.revoked.is_empty() for a in group.step(at_ms=at).values())
    holds = []
    for n in range(3, 6):
        group.join(f"W{n}")
        held = group.step(at_ms=at + 1)
        assert all(a.revoked.is_empty() for a in held.values())
        holds.append(held["W1"].delay_ms)
        still = group.step(at_ms=at + 2)
        assert {a.delay_ms for a in still.values()} == {holds[-1] - 1}
        at += 1 + holds[-1]
        assert any(not a.revoked.is_empty() for a in group.step(at_ms=at).values())
    assert holds == [1_000, 4_000, 16_000]
    group.settle(at_ms=at)
    assert is_balanced(group.running)
    assert everything_assigned_once(group)


def test_a_lagging_leader_config_gives_everyone_config_mismatch_and_no_work() -> None:
    group = settled_group({"A": 3})
    group.task_counts["B"] = 2
    group.config_offset = 11
    answers = group.round(leader_offset=10)
    for answer in answers.values():
        assert answer.error is AssignmentError.CONFIG_MISMATCH
        assert answer.assigned.is_empty() and answer.revoked.is_empty()
        assert answer.config_offset == 11
    caught_up = group.step()
    assert all(not a.failed for a in caught_up.values())
    assert everything_assigned_once(group)


def test_a_new_leader_rebuilds_its_state_from_the_reported_allocations() -> None:
    group = settled_group({"A": 6, "B": 3})
    group.crash("W1")
    group.assignor = IncrementalCooperativeAssignor(DELAY)
    answers = group.step("W2", at_ms=5_000)
    assert all(a.delay_ms == 0 and a.revoked.is_empty() for a in answers.values())
    assert everything_assigned_once(group)
    assert is_balanced(group.running)


def test_a_new_leader_honours_a_delay_it_inherited_as_a_follower() -> None:
    group = settled_group({"A": 6})
    group.crash("W1")
    group.assignor = IncrementalCooperativeAssignor(DELAY, inherited_deadline_ms=30_000)
    waiting = group.step("W2", at_ms=5_000)
    assert {a.delay_ms for a in waiting.values()} == {25_000}
    assert all(a.assigned.is_empty() for a in waiting.values())
    group.step("W2", at_ms=30_000)
    assert everything_assigned_once(group)
