"""The apply-this-assignment rules, one case per row, and the set algebra for any input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from herder.member.apply import AssignmentStep, apply_assignment
from protocol.messages import (
    EMPTY_ALLOCATION,
    Allocation,
    Assignment,
    AssignmentError,
    ConnectorTaskId,
)


def work(*tasks: int, connectors: tuple[str, ...] = ()) -> Allocation:
    return Allocation.of(connectors, (ConnectorTaskId("c", n) for n in tasks))


def answer(
    version: int = 2,
    assigned: Allocation = EMPTY_ALLOCATION,
    revoked: Allocation = EMPTY_ALLOCATION,
    error: AssignmentError = AssignmentError.NONE,
    leader_max_version: int = 2,
    delay_ms: int = 0,
) -> Assignment:
    return Assignment(
        version=version,
        leader_max_version=leader_max_version,
        error=error,
        leader_id="leader",
        leader_url="http://leader",
        config_offset=7,
        assigned=assigned,
        revoked=revoked,
        delay_ms=delay_ms,
    )


def step(
    assignment: Assignment, owned: Allocation, version: int = 2, max_version: int = 2
) -> AssignmentStep:
    return apply_assignment(assignment, owned, version, max_version)


def test_cooperative_stops_the_revoked_starts_the_assigned_and_rejoins() -> None:
    out = step(answer(assigned=work(5), revoked=work(1)), owned=work(1, 2))
    assert (out.stop, out.start, out.owned) == (work(1), work(5), work(2, 5))
    assert out.rejoin and out.accepted and not out.catch_up


def test_an_assignment_without_revocations_keeps_the_worker_in_the_group() -> None:
    out = step(answer(assigned=work(3), delay_ms=20_000), owned=work(1))
    assert (out.stop, out.start, out.owned) == (EMPTY_ALLOCATION, work(3), work(1, 3))
    assert not out.rejoin
    assert out.delay_ms == 20_000


def test_a_revocation_of_work_already_gone_stops_nothing_but_still_rejoins() -> None:
    """The leader revoked what the member reported; the member may have stopped it since
    (fenced), and the leader waits for a rejoin to hand it on."""
    out = step(answer(revoked=work(4)), owned=work(1))
    assert out.stop == EMPTY_ALLOCATION and out.owned == work(1)
    assert out.rejoin


def test_work_already_running_is_not_started_twice() -> None:
    out = step(answer(assigned=work(1, 2)), owned=work(1))
    assert out.start == work(2)


def test_config_mismatch_changes_no_work_and_catches_up_before_rejoining() -> None:
    out = step(answer(error=AssignmentError.CONFIG_MISMATCH, leader_max_version=1), owned=work(1))
    assert (out.stop, out.start, out.owned) == (EMPTY_ALLOCATION, EMPTY_ALLOCATION, work(1))
    assert out.rejoin and out.catch_up and not out.accepted
    assert out.version == 2


def test_a_probe_downgrades_the_next_subscription_and_keeps_the_work() -> None:
    out = step(
        answer(version=1, error=AssignmentError.VERSION_PROBE, leader_max_version=1),
        owned=work(1),
    )
    assert out.version == 1 and out.rejoin and not out.accepted
    assert out.owned == work(1) and out.stop == EMPTY_ALLOCATION


def test_a_leader_that_speaks_more_upgrades_the_member_after_applying_its_work() -> None:
    out = step(answer(version=1, assigned=work(2)), owned=EMPTY_ALLOCATION, version=1)
    assert out.version == 2 and out.rejoin and out.accepted
    assert out.start == work(2) and out.group_version == 1


def test_an_eager_worker_never_upgrades_beyond_its_own_maximum() -> None:
    out = step(answer(version=0, assigned=work(2)), EMPTY_ALLOCATION, 0, 0)
    assert out.version == 0 and not out.rejoin


def test_an_eager_assignment_found_running_work_stops_everything_first() -> None:
    out = step(answer(version=0, assigned=work(1)), owned=work(1, connectors=("c",)))
    assert out.stop == work(1, connectors=("c",)) and out.start == EMPTY_ALLOCATION
    assert out.owned == EMPTY_ALLOCATION and out.rejoin and out.group_version == 0


def test_an_eager_worker_that_stopped_before_joining_starts_its_whole_allocation() -> None:
    out = step(answer(version=0, assigned=work(1, 2)), EMPTY_ALLOCATION, 0, 0)
    assert (out.stop, out.start, out.owned) == (EMPTY_ALLOCATION, work(1, 2), work(1, 2))
    assert not out.rejoin


@pytest.mark.parametrize(
    "error", [AssignmentError.MALFORMED_SUBSCRIPTION, AssignmentError.VERSION_PROBE]
)
def test_a_refused_assignment_never_touches_work(error: AssignmentError) -> None:
    out = step(answer(error=error, assigned=work(9), revoked=work(1)), owned=work(1))
    assert out.owned == work(1) and out.stop == out.start == EMPTY_ALLOCATION


allocations = st.builds(lambda tasks: work(*tasks), st.frozensets(st.integers(0, 6), max_size=5))


@given(
    owned=allocations,
    assigned=allocations,
    revoked=allocations,
    version=st.sampled_from([0, 1, 2]),
    error=st.sampled_from(list(AssignmentError)),
)
def test_what_runs_afterwards_is_what_ran_less_the_stopped_plus_the_started(
    owned: Allocation,
    assigned: Allocation,
    revoked: Allocation,
    version: int,
    error: AssignmentError,
) -> None:
    out = step(answer(version, assigned, revoked, error), owned)
    assert out.stop.minus(owned).is_empty()
    assert out.start.intersection(owned).is_empty()
    assert out.owned == owned.minus(out.stop).union(out.start)
    if not out.accepted:
        assert out.owned == owned and out.rejoin
