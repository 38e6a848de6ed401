"""Load-aware placement (v5): new tasks go to workers with room, counts stay balanced among
them, and equal or unknown loads leave the assignment exactly as count balance makes it."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from herder.assignor import IncrementalCooperativeAssignor
from herder.assignor.room import closed_members, closed_workers
from protocol.messages import NO_LOAD, OVERLOADED_LOAD, Assignment
from protocol.versions import MEMBER_LOAD_VERSION
from tests.unit.assignor.group import Group, is_balanced, subscription
from tests.unit.assignor.test_placement import Layout, all_items, layouts, model_of

DELAY = 60_000
BUSY = OVERLOADED_LOAD + 250


def v5_group(counts: dict[str, int], members: int = 3) -> Group:
    group = Group(IncrementalCooperativeAssignor(DELAY), dict(counts), version=MEMBER_LOAD_VERSION)
    for n in range(1, members + 1):
        group.join(f"W{n}")
    group.settle()
    assert is_balanced(group.running)
    return group


def tasks_of(answers: dict[str, Assignment]) -> dict[str, int]:
    return {m: len(a.assigned.tasks) for m, a in answers.items()}


def test_only_overloaded_workers_are_closed_and_only_while_another_has_room() -> None:
    assert closed_workers([0, BUSY, 999, OVERLOADED_LOAD]) == {1, 3}
    assert closed_workers([BUSY, BUSY]) == frozenset()
    assert closed_workers([NO_LOAD, BUSY]) == {1}
    assert closed_workers([NO_LOAD, NO_LOAD]) == frozenset()
    assert closed_workers([]) == frozenset()


def test_closed_members_are_counted_among_the_members_that_stay() -> None:
    """A member leaving for good takes no task anyway: its room does not keep the
    overloaded ones open."""
    members = {
        "a": subscription("a", load=BUSY),
        "b": subscription("b", load=100, leaving=True),
        "c": subscription("c", load=BUSY),
    }
    assert closed_members(members) == {}
    members["d"] = subscription("d", load=0)
    assert closed_members(members) == {"a": members["a"], "c": members["c"]}


def test_an_overloaded_worker_gets_no_new_task_while_others_have_room() -> None:
    group = v5_group({"A": 6})
    group.loads = {"W1": 200, "W2": BUSY, "W3": 300}
    group.task_counts["B"] = 4
    answers = group.step()
    assert tasks_of(answers) == {"W1": 2, "W2": 0, "W3": 2}
    assert all(a.revoked.is_empty() and a.delay_ms == 0 for a in answers.values())
    assert group.settle() == 1


def test_the_overloaded_worker_keeps_its_tasks_and_takes_none_moved_for_balance() -> None:
    """A task is never moved for load alone, and balancing fills only workers with room.
    Connectors are not placed by load: a connector runs no Spark query of its own."""
    group = v5_group({"A": 6})
    before = group.running["W2"].tasks
    group.loads = {"W1": 200, "W2": BUSY, "W3": 300}
    group.task_counts["B"] = 7
    group.step()
    group.settle()
    assert group.running["W2"].tasks == before
    assert sorted(len(a.tasks) for m, a in group.running.items() if m != "W2") == [5, 6]


def test_the_work_of_a_member_gone_for_good_goes_to_workers_with_room() -> None:
    group = Group(IncrementalCooperativeAssignor(0), {"A": 6}, version=MEMBER_LOAD_VERSION)
    for member in ("W1", "W2", "W3"):
        group.join(member)
    group.settle()
    group.loads = {"W1": BUSY, "W2": 100}
    group.crash("W3")
    group.settle()
    assert len(group.running["W1"].tasks) == 2
    assert len(group.running["W2"].tasks) == 4


def test_among_workers_with_room_the_least_loaded_breaks_a_tie() -> None:
    group = v5_group({"A": 2}, members=2)
    group.loads = {"W1": 700, "W2": 100}
    group.task_counts["B"] = 1
    assert tasks_of(group.step()) == {"W1": 0, "W2": 1}
    group.loads = {"W1": 100, "W2": 700}
    group.task_counts["C"] = 1
    assert tasks_of(group.step()) == {"W1": 1, "W2": 0}


def test_when_every_worker_is_overloaded_counts_are_balanced_as_before() -> None:
    group = v5_group({"A": 6})
    group.loads = dict.fromkeys(("W1", "W2", "W3"), BUSY)
    group.task_counts["B"] = 3
    assert tasks_of(group.step()) == {"W1": 1, "W2": 1, "W3": 1}


def count_balanced_rounds(loads: dict[str, int], version: int) -> list[dict[str, Assignment]]:
    """A scripted history (new connectors, a worker joining, one leaving) under `loads`."""
    group = Group(IncrementalCooperativeAssignor(DELAY), {"A": 5, "B": 3}, version=version)
    group.loads = loads
    for member in ("W1", "W2", "W3"):
        group.join(member)
    rounds = [group.step()]
    group.task_counts["C"] = 4
    rounds.append(group.step())
    group.join("W4")
    rounds.extend(group.step() for _ in range(3))
    group.task_counts["D"] = 2
    rounds.append(group.step())
    return rounds


def test_equal_and_unknown_loads_assign_exactly_as_count_balance_does() -> None:
    """Count balance here is a v4 group's (no load field at all)."""
    counted = count_balanced_rounds({}, 4)
    equal = dict.fromkeys(("W1", "W2", "W3", "W4"), 400)
    assert count_balanced_rounds(equal, MEMBER_LOAD_VERSION) == [
        {m: _as_v5(a) for m, a in answers.items()} for answers in counted
    ]
    assert count_balanced_rounds({}, MEMBER_LOAD_VERSION) == count_balanced_rounds(
        equal, MEMBER_LOAD_VERSION
    )


def _as_v5(answer: Assignment) -> Assignment:
    return replace(answer, version=MEMBER_LOAD_VERSION, leader_max_version=MEMBER_LOAD_VERSION)


@settings(max_examples=300, deadline=None)
@given(layouts(), st.data())
def test_balance_with_closed_workers_fills_only_the_open_ones(
    layout: tuple[int, dict[str, int], Layout, list[set[str]]], data: st.DataObject
) -> None:
    workers, _, tasks, connectors = layout
    loads = data.draw(st.lists(st.sampled_from([0, 500, BUSY]), min_size=workers, max_size=workers))
    model = model_of(workers, tasks, connectors)
    model.weigh(loads)
    closed = closed_workers(loads)
    before = all_items(model)
    model.balance()
    assert model.is_balanced()
    assert all_items(model) == before
    for worker in closed:
        for connector, numbers in model.tasks[worker].items():
            assert numbers <= tasks[worker].get(connector, set())
    open_totals = [model.totals[w] for w in range(workers) if w not in closed]
    assert max(model.totals) - min(open_totals) <= 1


def test_new_tasks_on_a_model_with_a_closed_worker_skip_it() -> None:
    model = model_of(3, [{"A": {0}}, {"A": {1}}, {"A": {2}}], [set(), set(), set()])
    model.weigh([BUSY, 0, 0])
    model.place_tasks({"B": range(4)})
    assert [model.tasks[w].get("B", set()) for w in range(3)] == [set(), {0, 2}, {1, 3}]
    assert model.is_balanced()


@settings(max_examples=200, deadline=None)
@given(layouts(), st.data(), st.integers(0, 12))
def test_a_new_connector_on_a_balanced_weighed_model_moves_nothing_and_skips_closed_workers(
    layout: tuple[int, dict[str, int], Layout, list[set[str]]],
    data: st.DataObject,
    new_tasks: int,
) -> None:
    workers, _, tasks, connectors = layout
    loads = data.draw(st.lists(st.sampled_from([0, 500, BUSY]), min_size=workers, max_size=workers))
    model = model_of(workers, tasks, connectors)
    model.weigh(loads)
    model.balance()
    kept = [{c: set(ns) for c, ns in sets.items()} for sets in model.tasks]
    model.place_tasks({"NEW": range(new_tasks)})
    assert model.is_balanced()
    for worker in range(workers):
        old = {c: ns for c, ns in model.tasks[worker].items() if c != "NEW"}
        assert old == kept[worker]
        if worker in closed_workers(loads):
            assert "NEW" not in model.tasks[worker]
