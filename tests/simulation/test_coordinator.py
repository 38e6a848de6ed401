"""The simulated coordinator keeps Kafka's group semantics."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.messages import Assignment, AssignmentError, Subscription
from tests.simulation.coordinator import (
    GroupCoordinator,
    Heartbeat,
    JoinedGroup,
    Phase,
    Timeouts,
)
from tests.simulation.events import EventLoop

TIMEOUTS = Timeouts(heartbeat_interval_ms=1_000, session_ms=5_000, rebalance_ms=20_000)


@dataclass
class Member:
    """A scripted member: answers what the test tells it to, records what it got."""

    name: str
    led: list[int] = field(default_factory=list)
    synced: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    def lead(self, group: JoinedGroup) -> dict[str, Assignment]:
        self.led.append(group.generation)
        answer = Assignment(2, 2, AssignmentError.NONE, group.leader_id, "", 0)
        return dict.fromkeys(group.members, answer)

    def on_sync(self, generation: int, assignment: Assignment) -> None:
        self.synced.append(generation)

    def on_sync_failed(self, generation: int) -> None:
        self.failed.append(generation)


def subscription(name: str) -> Subscription:
    return Subscription(2, 2, name, f"http://{name}", 0)


def group() -> tuple[EventLoop, GroupCoordinator, list[JoinedGroup]]:
    loop = EventLoop()
    seen: list[JoinedGroup] = []
    coordinator = GroupCoordinator(loop, TIMEOUTS, lambda g, _: seen.append(g))
    return loop, coordinator, seen


def join(coordinator: GroupCoordinator, member: Member, member_id: str | None = None) -> str:
    return coordinator.join(member, member_id, subscription(member.name))


def test_the_leader_stays_leader_while_it_is_a_member() -> None:
    loop, coordinator, seen = group()
    a, b = Member("a"), Member("b")
    a_id = join(coordinator, a)
    loop.run_until(0)
    b_id = join(coordinator, b)
    assert coordinator.heartbeat(a_id) is Heartbeat.REBALANCE
    join(coordinator, a, a_id)
    loop.run_until(1)
    assert [g.leader_id for g in seen] == [a_id, a_id]
    assert a.led == [1, 2] and not b.led
    coordinator.leave(a_id)
    assert coordinator.heartbeat(b_id) is Heartbeat.REBALANCE
    join(coordinator, b, b_id)
    loop.run_until(2)
    assert seen[-1].leader_id == b_id
    assert b.synced == [2, 3]


def test_a_silent_member_is_removed_after_the_session_time_out() -> None:
    loop, coordinator, seen = group()
    a, b = Member("a"), Member("b")
    a_id, b_id = join(coordinator, a), join(coordinator, b)
    loop.run_until(0)
    for at in range(1_000, 5_000, 1_000):
        loop.run_until(at)
        coordinator.heartbeat(a_id)
    assert b_id in coordinator.members
    loop.run_until(5_000)
    assert b_id not in coordinator.members
    assert coordinator.phase is Phase.PREPARING
    join(coordinator, a, a_id)
    loop.run_until(5_001)
    assert list(seen[-1].members) == [a_id]


def test_a_member_that_does_not_rejoin_is_dropped_at_the_rebalance_time_out() -> None:
    loop, coordinator, seen = group()
    a, b = Member("a"), Member("b")
    a_id, b_id = join(coordinator, a), join(coordinator, b)
    loop.run_until(0)
    join(coordinator, a, a_id)
    for at in range(1_000, 20_001, 1_000):
        loop.run_until(at)
        coordinator.heartbeat(a_id)
        assert coordinator.heartbeat(b_id) in (Heartbeat.REBALANCE, Heartbeat.UNKNOWN)
    assert b_id not in coordinator.members
    assert list(seen[-1].members) == [a_id]


def test_a_failed_sync_is_reported_to_that_member_only() -> None:
    loop, coordinator, _ = group()
    a, b = Member("a"), Member("b")
    join(coordinator, a)
    b_id = join(coordinator, b)
    coordinator.fail_next_sync(b_id)
    loop.run_until(0)
    assert a.synced == [1] and not a.failed
    assert b.failed == [1] and not b.synced


def test_a_rebalance_starting_before_delivery_fails_the_sync_of_members_not_rejoined() -> None:
    loop, coordinator, _ = group()
    a, b, c = Member("a"), Member("b"), Member("c")
    join(coordinator, a)
    join(coordinator, b)

    def c_joins() -> None:
        join(coordinator, c)

    loop.call_soon(c_joins)
    loop.run_until(0)
    assert a.failed == [1] and b.failed == [1]
    assert not c.failed
