"""Property tests of the balancing engine: any start can be balanced; new work keeps balance."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from herder.assignor.placement import LoadModel, TaskSets

Layout = list[dict[str, set[int]]]


@st.composite
def layouts(draw: st.DrawFn) -> tuple[int, dict[str, int], Layout, list[set[str]]]:
    workers = draw(st.integers(1, 6))
    counts = draw(st.dictionaries(st.sampled_from("ABCDEFG"), st.integers(0, 9), max_size=6))
    tasks: Layout = [{} for _ in range(workers)]
    connectors: list[set[str]] = [set() for _ in range(workers)]
    for connector, count in counts.items():
        connectors[draw(st.integers(0, workers - 1))].add(connector)
        for task in range(count):
            owner = draw(st.integers(0, workers - 1))
            tasks[owner].setdefault(connector, set()).add(task)
    return workers, counts, tasks, connectors


def model_of(workers: int, tasks: Layout, connectors: list[set[str]]) -> LoadModel:
    model = LoadModel([f"w{n}" for n in range(workers)])
    for worker in range(workers):
        model.keep(worker, tasks[worker], frozenset(connectors[worker]))
    return model


def all_items(model: LoadModel) -> tuple[list[tuple[str, int]], list[str]]:
    tasks = sorted((c, t) for sets in model.tasks for c, ns in sets.items() for t in ns)
    connectors = sorted(c for names in model.connectors for c in names)
    return tasks, connectors


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_balance_reaches_a_balanced_model_and_keeps_every_item_once(
    layout: tuple[int, dict[str, int], Layout, list[set[str]]],
) -> None:
    workers, _, tasks, connectors = layout
    model = model_of(workers, tasks, connectors)
    before = all_items(model)
    model.balance()
    assert model.is_balanced()
    assert all_items(model) == before


@settings(max_examples=200, deadline=None)
@given(layouts(), st.integers(0, 12))
def test_a_new_connector_placed_on_a_balanced_model_keeps_it_balanced_without_moves(
    layout: tuple[int, dict[str, int], Layout, list[set[str]]], new_tasks: int
) -> None:
    workers, _, tasks, connectors = layout
    model = model_of(workers, tasks, connectors)
    model.balance()
    kept: list[TaskSets] = [{c: set(ns) for c, ns in sets.items()} for sets in model.tasks]
    model.place_tasks({"NEW": range(new_tasks)})
    model.place_connectors(["NEW"])
    assert model.is_balanced()
    for worker in range(workers):
        old = {c: ns for c, ns in model.tasks[worker].items() if c != "NEW"}
        assert old == kept[worker]


def test_free_moves_are_preferred_over_moving_running_tasks() -> None:
    model = LoadModel(["w0", "w1"])
    model.keep(0, {"A": {0, 1}}, frozenset())
    model.add_task(0, "A", 2)
    model.add_task(0, "A", 3)
    model.balance()
    assert model.tasks[0] == {"A": {0, 1}}
    assert model.tasks[1] == {"A": {2, 3}}
