from __future__ import annotations

from herder.assignor import EagerAssignor
from protocol.messages import AssignmentError
from tests.unit.assignor.group import Group, is_balanced


def eager_group(counts: dict[str, int], members: int) -> Group:
    group = Group(EagerAssignor(), dict(counts), version=0)
    for n in range(1, members + 1):
        group.join(f"W{n}")
    return group


def test_every_member_gets_its_complete_balanced_allocation() -> None:
    group = eager_group({"A": 5, "B": 3, "C": 0}, 3)
    answers = group.step()
    assert sum(a.assigned.size() for a in answers.values()) == 3 + 8
    assert all(a.revoked.is_empty() and a.delay_ms == 0 for a in answers.values())
    assert is_balanced(group.running)


def test_a_later_round_answers_from_scratch_again() -> None:
    group = eager_group({"A": 6}, 2)
    group.step()
    group.join("W3")
    answers = group.step()
    assert sum(a.assigned.size() for a in answers.values()) == 7
    assert is_balanced(group.running)


def test_a_lagging_leader_gives_config_mismatch() -> None:
    group = eager_group({"A": 2}, 2)
    answers = group.round(leader_offset=3)
    assert all(a.error is AssignmentError.CONFIG_MISMATCH for a in answers.values())
    assert all(a.assigned.is_empty() for a in answers.values())
