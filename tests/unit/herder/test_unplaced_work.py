"""What the leader marks UNASSIGNED on others' behalf: only work nobody runs.

A task revoked for hand-off is still its holder's until the holder applies the
revocation, which it may never do (its SyncGroup can fail when the next rebalance
starts); a leader that marked it UNASSIGNED would outrank the holder's RUNNING for good.
"""

from __future__ import annotations

from herder.member.leader import unplaced_work
from protocol.messages import Allocation, Assignment, AssignmentError, ConnectorTaskId, Subscription


def task(n: int) -> ConnectorTaskId:
    return ConnectorTaskId("beta", n)


def member(name: str, *tasks: int) -> Subscription:
    return Subscription(2, 2, name, f"http://{name}", 0, Allocation.of((), map(task, tasks)))


def answer(
    version: int, assigned: tuple[int, ...] = (), revoked: tuple[int, ...] = ()
) -> Assignment:
    return Assignment(
        version=version,
        leader_max_version=2,
        error=AssignmentError.NONE,
        leader_id="a",
        leader_url="http://a",
        config_offset=0,
        assigned=Allocation.of((), map(task, assigned)),
        revoked=Allocation.of((), map(task, revoked)),
    )


CONFIGURED = Allocation.of((), map(task, range(5)))


def test_only_work_nobody_reports_or_gets_is_unplaced() -> None:
    members = {"a": member("a", 0), "b": member("b", 1, 2), "c": member("c")}
    answers = {"a": answer(2), "b": answer(2, revoked=(2,)), "c": answer(2, assigned=(3,))}
    assert unplaced_work(CONFIGURED, members, answers) == Allocation.of((), [task(4)])


def test_eager_members_stopped_everything_they_report() -> None:
    members = {"a": member("a", 0, 1), "b": member("b", 2)}
    answers = {"a": answer(0, assigned=(0, 1, 2)), "b": answer(0, assigned=(3,))}
    assert unplaced_work(CONFIGURED, members, answers) == Allocation.of((), [task(4)])
    assert unplaced_work(CONFIGURED, members, {}) == CONFIGURED
