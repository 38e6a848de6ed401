"""GroupLoop only carries the member machine out, and each of its fields has one owner.

Read from herder/member/group_loop.py itself: the loop touches the machine through its entry
points alone (what it needs comes in commands, `Report` above all), and no field of the
loop is written by two of its coroutines (the watchdog's `_fence_posted` was, by the
watchdog and by the loop). The machine's side of that bargain, that the commands the loop
writes its fields for come only to run at once and never in a step, is checked on random
walks through the machine's table.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from herder.member import lifecycle_messages as do
from herder.member.lifecycle import TRANSITIONS
from herder.member.member_states import IN_GROUP
from tests.unit.herder.test_lifecycle import EVENTS, machine

SOURCE = Path(__file__).resolve().parents[3] / "herder" / "member" / "group_loop.py"
ENTRY_POINTS = {"start", "handle"}
"""What `Lifecycle` offers its interpreter (its docstring says so)."""
RUNS_IN: dict[str, set[str]] = {
    "run": {"loop"},
    "_decide": {"loop"},
    "_now": {"loop"},
    "_fence": {"loop"},
    "stop": {"loop"},  # once the loop has ended: `DistributedHerder.stop` cancels it first
    "_execute": {"loop", "step"},
    "_run_step": {"step"},
    "_join": {"step"},
    "fence_when_out_of_touch": {"watchdog"},
    "_tick": {"ticker"},
    "_heartbeat": {"heartbeat"},
    "_relay": {"relays"},
    "_serve_requests": {"lane"},
    "leave_for_good": {"callers"},
    "config_changed": {"callers"},
    "scheduled_rebalance_s": {"callers"},
    "_now_ms": {"loop", "step", "ticker"},
}
"""The coroutine(s) each method of GroupLoop runs in; properties only read."""
RUN_AT_ONCE_ONLY = (
    do.Report,
    do.StartHeartbeat,
    do.ServeRequests,
    do.Departing,
    do.HandOffDone,
)
"""The commands `GroupLoop._now` writes fields for: never part of a step."""


def group_loop() -> ast.ClassDef:
    tree = ast.parse(SOURCE.read_text())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GroupLoop")


def methods() -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in group_loop().body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def is_self(node: ast.AST, attribute: str | None = None) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and (attribute is None or node.attr == attribute)
    )


def machine_field() -> str:
    """The field that holds the machine: the one `__init__` sets to a `Lifecycle`."""
    init = next(m for m in methods() if m.name == "__init__")
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            made = node.value.func
            if isinstance(made, ast.Name) and made.id == "Lifecycle":
                [field] = [t.attr for t in node.targets if isinstance(t, ast.Attribute)]
                return field
    raise AssertionError("GroupLoop.__init__ makes no Lifecycle")


def writes(method: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The fields `method` assigns, or sets and clears (an `asyncio.Event`)."""
    found: set[str] = set()
    for node in ast.walk(method):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [
                e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])
            ]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"set", "clear"}
        ):
            targets = [node.func.value]
        found |= {t.attr for t in targets if is_self(t) and isinstance(t, ast.Attribute)}
    return found


def test_the_loop_touches_the_machine_only_through_its_entry_points() -> None:
    field, loop = machine_field(), group_loop()
    parents = {child: node for node in ast.walk(loop) for child in ast.iter_child_nodes(node)}
    used: list[str] = []
    for node in ast.walk(loop):
        if is_self(node, field):
            parent = parents[node]
            if isinstance(parent, ast.Assign) and node in parent.targets:
                continue
            used.append(parent.attr if isinstance(parent, ast.Attribute) else type(parent).__name__)
    assert used and set(used) <= ENTRY_POINTS, f"GroupLoop reads the machine's {sorted(set(used))}"


def test_each_method_of_the_loop_is_known_to_run_in_its_coroutines() -> None:
    names = {m.name for m in methods() if not any(is_property(d) for d in m.decorator_list)}
    assert names - {"__init__"} == set(RUNS_IN)


def is_property(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "property"


def test_no_field_of_the_loop_is_written_by_two_coroutines() -> None:
    owners: dict[str, set[str]] = {}
    for method in methods():
        if method.name == "__init__":
            continue
        for field in writes(method):
            owners.setdefault(field, set()).update(RUNS_IN.get(method.name, {"callers"}))
    shared = {field: sorted(who) for field, who in owners.items() if len(who) > 1}
    assert owners and shared == {}


def test_the_loop_runs_at_once_what_the_machine_gives_only_to_run_at_once() -> None:
    now = next(m for m in methods() if m.name == "_now")
    handled = {
        case.pattern.cls.attr
        for node in ast.walk(now)
        if isinstance(node, ast.Match)
        for case in node.cases
        if isinstance(case.pattern, ast.MatchClass) and isinstance(case.pattern.cls, ast.Attribute)
    }
    assert {kind.__name__ for kind in RUN_AT_ONCE_ONLY} <= handled


@pytest.mark.parametrize("seed", range(40))
def test_what_the_loop_writes_fields_for_is_never_part_of_a_step(seed: int) -> None:
    """And the heartbeat runs exactly while the member is in the group."""
    chance = random.Random(seed)
    subject = machine(warm_up=chance.random() < 0.5, static=chance.random() < 0.5)
    decisions = [subject.start()]
    beating = False
    for _ in range(200):
        for decision in decisions:
            assert not any(isinstance(c, RUN_AT_ONCE_ONLY) for c in decision.step or ())
            for command in decision.now:
                if isinstance(command, do.StartHeartbeat | do.StopHeartbeat):
                    assert beating is isinstance(command, do.StopHeartbeat), command
                    beating = isinstance(command, do.StartHeartbeat)
        assert beating is (subject.state in IN_GROUP), subject.state
        kinds = [kind for state, kind in TRANSITIONS if state is subject.state]
        if not kinds:
            return
        decisions = [subject.handle(chance.choice(EVENTS[chance.choice(kinds)]))]
