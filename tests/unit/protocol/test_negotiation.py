"""Leader-side planning and member-side version changes, as pure functions."""

from __future__ import annotations

import pytest

from protocol import CURRENT_VERSION
from protocol.codec import Codec, encode_subscription
from protocol.messages import Allocation, AssignmentError, Subscription
from protocol.negotiation import (
    LeaderInfo,
    must_release_for_eager,
    next_version_after,
    plan_versions,
)
from tests.unit.protocol.samples import (
    FUTURE_VERSION,
    RUNNING,
    assignment,
    codec_of_release,
    readable,
    subscription,
)

LEADER = LeaderInfo(leader_id="leader", leader_url="http://leader:8083", config_offset=9)


def member(version: int, max_version: int | None = None, **changes: object) -> bytes:
    top = version if max_version is None else max_version
    codec = codec_of_release(FUTURE_VERSION)
    return codec.encode_subscription(subscription(version, max_version=top, **changes))


def test_the_group_runs_at_the_highest_version_every_member_supports() -> None:
    plan = plan_versions({"a": member(2), "b": member(1, 2), "c": member(1)}, 2)
    assert plan.group_version == 1
    assert set(plan.subscriptions) == {"a", "b", "c"}
    assert not plan.probed and not plan.malformed


def test_one_eager_member_runs_the_whole_group_eagerly() -> None:
    plan = plan_versions({"a": member(2), "eager": member(0)}, 2)
    assert plan.group_version == 0


def test_the_group_never_runs_above_the_leader() -> None:
    assert plan_versions({"a": member(2), "b": member(2)}, 0).group_version == 0
    assert plan_versions({"a": member(2)}, 1).group_version == 1


def test_an_empty_round_runs_at_the_leader_version() -> None:
    assert plan_versions({}, 2).group_version == 2


def test_a_member_ahead_of_the_leader_code_is_probed_not_counted() -> None:
    plan = plan_versions({"new": member(FUTURE_VERSION), "old": member(1)}, 2)
    assert plan.group_version == 1
    assert set(plan.probed) == {"new"}
    assert plan.probed["new"] == readable(subscription(FUTURE_VERSION), CURRENT_VERSION)


def test_downgraded_members_that_could_speak_more_are_not_probed() -> None:
    plan = plan_versions({"a": member(2, FUTURE_VERSION)}, 2)
    assert not plan.probed
    assert plan.group_version == 2


def test_an_older_leader_probes_what_its_code_cannot_read() -> None:
    plan = plan_versions({"a": member(2), "b": member(1)}, 1, Codec(1))
    assert set(plan.probed) == {"a"}
    assert plan.group_version == 1


def test_garbage_is_set_aside_with_the_reason() -> None:
    plan = plan_versions({"ok": member(2), "junk": b"\x00\x02\x00", "empty": b""}, 2)
    assert set(plan.subscriptions) == {"ok"}
    assert set(plan.malformed) == {"junk", "empty"}
    assert "subscription: truncated: max_version needs 2 bytes" in plan.malformed["junk"]


def test_the_leader_max_version_must_be_readable_by_its_codec() -> None:
    with pytest.raises(ValueError, match=r"leader_max_version must be within 0\.\.1"):
        plan_versions({}, 2, Codec(1))


def test_rejections_answer_probed_and_malformed_members_with_no_work() -> None:
    plan = plan_versions({"new": member(FUTURE_VERSION), "junk": b"\xff", "old": member(1)}, 2)
    rejections = plan.rejections(LEADER)
    assert set(rejections) == {"new", "junk"}
    probe, malformed = rejections["new"], rejections["junk"]
    assert probe.error is AssignmentError.VERSION_PROBE
    assert (probe.version, probe.leader_max_version) == (2, 2)
    assert malformed.error is AssignmentError.MALFORMED_SUBSCRIPTION
    assert (malformed.version, malformed.leader_max_version) == (1, 2)
    for rejection in rejections.values():
        assert rejection.assigned.is_empty() and rejection.revoked.is_empty()
        assert (rejection.leader_id, rejection.leader_url) == (LEADER.leader_id, LEADER.leader_url)
        assert rejection.config_offset == LEADER.config_offset
        assert rejection.delay_ms == 0


def test_a_garbage_member_cannot_break_the_leader() -> None:
    """Whatever a member sends, planning completes and the member gets a valid answer."""
    payloads = [b"", b"\xff" * 3, member(2)[:-1], member(2) + b"junk", bytes(range(256))]
    plan = plan_versions({f"m{i}": data for i, data in enumerate(payloads)}, 2)
    assert set(plan.malformed) == {f"m{i}" for i in range(len(payloads))}
    assert len(plan.rejections(LEADER)) == len(payloads)


def test_an_eager_downgrade_first_assigns_nothing_while_cooperative_work_runs() -> None:
    downgrading = plan_versions({"coop": member(2, allocation=RUNNING), "eager": member(0)}, 2)
    assert downgrading.requires_empty_eager_round
    empty = downgrading.empty_assignment(LEADER)
    assert (empty.version, empty.error) == (0, AssignmentError.NONE)
    assert empty.assigned.is_empty()


def test_the_second_eager_round_is_a_regular_one() -> None:
    settled = plan_versions({"coop": member(2, allocation=Allocation()), "eager": member(0)}, 2)
    assert not settled.requires_empty_eager_round


def test_cooperative_groups_never_need_an_empty_round() -> None:
    assert not plan_versions({"a": member(2), "b": member(1)}, 2).requires_empty_eager_round


@pytest.mark.parametrize(
    ("error", "leader_max", "used", "own_max", "expected"),
    [
        (AssignmentError.VERSION_PROBE, 2, 3, 3, 2),
        (AssignmentError.VERSION_PROBE, 0, 2, 2, 0),
        (AssignmentError.VERSION_PROBE, 3, 3, 3, None),
        (AssignmentError.NONE, 3, 2, 3, 3),
        (AssignmentError.NONE, 3, 1, 2, 2),
        (AssignmentError.NONE, 3, 2, 2, None),
        (AssignmentError.NONE, 2, 0, 0, None),
        (AssignmentError.NONE, 1, 2, 2, None),
        (AssignmentError.CONFIG_MISMATCH, 3, 2, 3, 3),
        (AssignmentError.MALFORMED_SUBSCRIPTION, 2, 2, 2, None),
    ],
)
def test_next_version_after(
    error: AssignmentError, leader_max: int, used: int, own_max: int, expected: int | None
) -> None:
    answer = assignment(min(leader_max, 2), leader_max_version=leader_max, error=error)
    assert next_version_after(answer, used, own_max) == expected


@pytest.mark.parametrize(
    ("version", "error", "running", "expected"),
    [
        (0, AssignmentError.NONE, RUNNING, True),
        (0, AssignmentError.NONE, Allocation(), False),
        (1, AssignmentError.NONE, RUNNING, False),
        (0, AssignmentError.CONFIG_MISMATCH, RUNNING, False),
    ],
)
def test_must_release_for_eager(
    version: int, error: AssignmentError, running: Allocation, expected: bool
) -> None:
    assert must_release_for_eager(assignment(version, error=error), running) is expected


def test_subscriptions_keep_their_identity_through_planning() -> None:
    sub = Subscription(2, 2, "w", "http://w", 1, RUNNING, instance_id="pod-0")
    plan = plan_versions({"m": encode_subscription(sub)}, 2)
    assert plan.subscriptions["m"] == sub
