"""What a member does about each error code of JoinGroup, SyncGroup and Heartbeat (pure)."""

from __future__ import annotations

import pytest

from herder.member.group_errors import MemberId, Reaction, Request, Verdict, reaction

JOIN, SYNC, HEARTBEAT = Request.JOIN, Request.SYNC, Request.HEARTBEAT
FAILED = Verdict.FAILED_ROUND


@pytest.mark.parametrize(
    ("request_", "code", "expected"),
    [
        pytest.param(JOIN, 0, Reaction(Verdict.DONE), id="join-none"),
        pytest.param(
            JOIN, 79, Reaction(Verdict.RETRY, MemberId.TAKE), id="join-member-id-required"
        ),
        pytest.param(JOIN, 25, Reaction(Verdict.RETRY, MemberId.FORGET), id="join-unknown-member"),
        pytest.param(JOIN, 23, Reaction(Verdict.FATAL), id="join-inconsistent-protocol"),
        pytest.param(JOIN, 82, Reaction(Verdict.FATAL), id="join-fenced-instance-id"),
        pytest.param(JOIN, 27, Reaction(FAILED), id="join-rebalance-in-progress"),
        pytest.param(JOIN, 22, Reaction(FAILED), id="join-illegal-generation"),
        pytest.param(
            JOIN, 14, Reaction(FAILED, forget_coordinator=True), id="join-coordinator-loading"
        ),
        pytest.param(
            JOIN, 15, Reaction(FAILED, forget_coordinator=True), id="join-coordinator-unavailable"
        ),
        pytest.param(
            JOIN, 16, Reaction(FAILED, forget_coordinator=True), id="join-not-coordinator"
        ),
        pytest.param(JOIN, 58, Reaction(FAILED), id="join-any-other-code"),
        pytest.param(SYNC, 0, Reaction(Verdict.DONE), id="sync-none"),
        pytest.param(SYNC, 25, Reaction(FAILED, MemberId.FORGET), id="sync-unknown-member"),
        pytest.param(SYNC, 27, Reaction(FAILED), id="sync-rebalance-in-progress"),
        pytest.param(SYNC, 22, Reaction(FAILED), id="sync-illegal-generation"),
        pytest.param(SYNC, 79, Reaction(FAILED), id="sync-member-id-required"),
        pytest.param(SYNC, 82, Reaction(FAILED), id="sync-fenced-instance-id"),
        pytest.param(
            SYNC, 16, Reaction(FAILED, forget_coordinator=True), id="sync-not-coordinator"
        ),
        pytest.param(HEARTBEAT, 0, Reaction(Verdict.DONE), id="heartbeat-none"),
        pytest.param(
            HEARTBEAT,
            27,
            Reaction(Verdict.REJOIN, rebalance_started=True),
            id="heartbeat-rebalance-in-progress",
        ),
        pytest.param(
            HEARTBEAT,
            22,
            Reaction(Verdict.REJOIN, rebalance_started=True),
            id="heartbeat-illegal-generation",
        ),
        pytest.param(HEARTBEAT, 14, Reaction(Verdict.REJOIN), id="heartbeat-coordinator-loading"),
        pytest.param(
            HEARTBEAT, 15, Reaction(Verdict.REJOIN), id="heartbeat-coordinator-unavailable"
        ),
        pytest.param(HEARTBEAT, 16, Reaction(Verdict.REJOIN), id="heartbeat-not-coordinator"),
        pytest.param(
            HEARTBEAT,
            25,
            Reaction(Verdict.MEMBER_LOST, MemberId.FORGET),
            id="heartbeat-unknown-member",
        ),
        pytest.param(
            HEARTBEAT, 82, Reaction(Verdict.MEMBER_LOST), id="heartbeat-fenced-instance-id"
        ),
        pytest.param(
            HEARTBEAT, 58, Reaction(Verdict.REJOIN, unexpected=True), id="heartbeat-any-other-code"
        ),
    ],
)
def test_each_code_has_one_reaction(request_: Request, code: int, expected: Reaction) -> None:
    assert reaction(request_, code) == expected
