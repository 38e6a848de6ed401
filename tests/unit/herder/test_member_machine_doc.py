"""docs/architecture.md shows the member machine's table as the code has it, row for row.

The tables between the markers are made from `herder.member.lifecycle` by `member_machine_tables`
below; a change of the machine that the page does not follow fails here, with the
tables the page should show.
"""

from __future__ import annotations

from pathlib import Path

from herder.member.lifecycle import CHORES, START, TRANSITIONS, ChoreRow, Next
from herder.member.member_states import (
    CARRYING_OUT,
    CHORE_STATES,
    IN_GROUP,
    JOINING_STATES,
    MemberState,
)

PAGE = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"
BEGIN = (
    "<!-- the member machine's tables: made from herder/member/lifecycle.py, checked by a test -->"
)
END = "<!-- end of the member machine's tables -->"


GROUPS = (
    ("in the group", IN_GROUP),
    ("joining", JOINING_STATES),
    ("a chore", CHORE_STATES),
    ("carrying out", CARRYING_OUT),
)
"""Names for sets of states, so that a line of the table says which it is in."""


def _state(state: MemberState) -> str:
    return f"`{state.name}`"


def _states(states: list[MemberState]) -> str:
    """The largest named sets first, then the states no set names."""
    left, said = list(states), []
    for name, group in GROUPS:
        if all(state in left for state in group):
            said.append(f"*{name}*")
            left = [state for state in left if state not in group]
    return ", ".join([*said, *map(_state, left)])


def _target(to: MemberState | Next) -> str:
    if isinstance(to, MemberState):
        return _state(to)
    return "stays" if to is Next.STAY else "the next chore"


def _rows_without_event(rows: tuple[ChoreRow, ...]) -> list[str]:
    lines = ["| when | next state | action |", "| --- | --- | --- |"]
    lines += [f"| {row.says} | {_state(row.to)} | `{row.action.__name__}` |" for row in rows]
    return lines


def member_machine_tables() -> list[str]:
    """The states, the first transition, the transitions (the states that share a row
    share a line) and the choice of the next chore, as markdown."""
    lines = ["| state | what the worker does |", "| --- | --- |"]
    lines += [f"| {_state(state)} | {state.value} |" for state in MemberState]
    lines += [""] + [
        f"- *{name}*: {', '.join(map(_state, group))}." for name, group in reversed(GROUPS)
    ]
    lines += ["", "The first transition (`Lifecycle.start`), from `STARTING`:", ""]
    lines += _rows_without_event(START)
    shared: dict[tuple[str, str, str, str], list[MemberState]] = {}
    for (state, event), rows in TRANSITIONS.items():
        for index, row in enumerate(rows):
            when = row.when.says if row.when else ("otherwise" if index else "")
            key = (event.__name__, when, _target(row.to), row.action.__name__)
            shared.setdefault(key, []).append(state)
    lines += ["", "| in | event | when | next state | action |", "| --- | --- | --- | --- | --- |"]
    lines += [
        f"| {_states(states)} | `{event}` | {when} | {to} | `{action}` |"
        for (event, when, to, action), states in shared.items()
    ]
    lines += ["", "The next chore, once a step is over: the first row that is due.", ""]
    return lines + _rows_without_event(CHORES)


def test_the_architecture_page_shows_the_member_machine_as_the_code_has_it() -> None:
    text = PAGE.read_text()
    assert BEGIN in text and END in text, f"{PAGE.name} lacks the markers {BEGIN!r} ... {END!r}"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip().splitlines()
    expected = member_machine_tables()
    assert shown == expected, "the page should show:\n" + "\n".join(expected)
