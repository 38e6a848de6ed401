"""v5's member load: it round-trips, older members' loads read as unknown, a v4 leader
still understands (and probes) a v5 member, and a load below "unknown" is refused."""

from __future__ import annotations

import pytest

from protocol.codec import Codec, decode_subscription, encode_subscription
from protocol.errors import DecodeError, EncodeError
from protocol.messages import NO_LOAD, OVERLOADED_LOAD
from protocol.negotiation import plan_versions
from protocol.versions import MEMBER_LOAD_VERSION
from protocol.wire import INT16_MAX
from tests.unit.protocol.samples import RUNNING, subscription


@pytest.mark.parametrize("load", [NO_LOAD, 0, 730, OVERLOADED_LOAD, INT16_MAX])
def test_a_load_round_trips(load: int) -> None:
    sub = subscription(MEMBER_LOAD_VERSION, load=load)
    assert decode_subscription(encode_subscription(sub)) == sub


@pytest.mark.parametrize("version", range(MEMBER_LOAD_VERSION))
def test_an_older_member_has_no_load(version: int) -> None:
    """What a v5 leader reads of an older member: the load is unknown, never 0."""
    payload = Codec(version).encode_subscription(subscription(version))
    assert decode_subscription(payload).load == NO_LOAD


def test_a_v4_leader_reads_a_v5_member_without_its_load_and_probes_it() -> None:
    """The member keeps its allocation in the v4 leader's eyes (it goes on running it
    while it rejoins at v4), and its load, a field the leader does not know, is skipped."""
    v5_member = encode_subscription(subscription(MEMBER_LOAD_VERSION, load=900))
    v4_member = Codec(4).encode_subscription(subscription(4))
    plan = plan_versions({"new": v5_member, "old": v4_member}, 4, Codec(4))
    assert set(plan.probed) == {"new"} and set(plan.subscriptions) == {"old"}
    assert plan.probed["new"].allocation == RUNNING
    assert plan.probed["new"].load == NO_LOAD
    assert plan.group_version == 4


def test_a_v5_member_writing_at_v4_for_its_group_sends_no_load() -> None:
    """In a group that still speaks v4 a v5 worker writes v4, which has no load field."""
    sub = subscription(4, max_version=MEMBER_LOAD_VERSION, load=900)
    assert decode_subscription(encode_subscription(sub)).load == NO_LOAD


def test_a_load_below_unknown_is_refused_both_ways() -> None:
    with pytest.raises(EncodeError, match="load must be -1"):
        encode_subscription(subscription(MEMBER_LOAD_VERSION, load=-2))
    payload = encode_subscription(subscription(MEMBER_LOAD_VERSION, load=INT16_MAX))
    broken = payload[:-2] + (-5).to_bytes(2, "big", signed=True)
    with pytest.raises(DecodeError, match="load must be -1"):
        decode_subscription(broken)
