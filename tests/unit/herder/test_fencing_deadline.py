"""When a member must stop its work on its own: the two ways a coordinator drops it."""

from __future__ import annotations

from herder.member.group_member import GroupMember


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def member(clock: FakeClock) -> GroupMember:
    return GroupMember(
        "127.0.0.1:1",
        "group",
        "sparkherd",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=60_000,
        clock=clock,
    )


async def test_an_unreachable_coordinator_fences_one_margin_before_the_session_expires() -> None:
    clock = FakeClock()
    subject = member(clock)
    subject._unreachable = True
    clock.now = 1006.9
    assert not subject.must_fence(margin_s=3.0)
    clock.now = 1007.0
    assert subject.must_fence(margin_s=3.0)


async def test_a_reachable_coordinator_that_holds_a_request_is_not_a_reason_to_fence() -> None:
    clock = FakeClock()
    subject = member(clock)
    clock.now = 1030.0
    assert not subject.must_fence(margin_s=3.0)


async def test_a_pending_join_is_bounded_by_the_rebalance_timeout() -> None:
    clock = FakeClock()
    subject = member(clock)
    subject._join_sent_at = 1002.0
    clock.now = 1030.0
    assert not subject.must_fence(margin_s=3.0)
    clock.now = 1059.0
    assert subject.must_fence(margin_s=3.0)


async def test_a_rebalance_in_progress_gives_the_member_the_rebalance_timeout_to_rejoin() -> None:
    clock = FakeClock()
    subject = member(clock)
    subject._rebalance_noticed_at = 1005.0
    clock.now = 1040.0
    assert not subject.must_fence(margin_s=3.0)
    clock.now = 1062.0
    assert subject.must_fence(margin_s=3.0)
