"""Group membership against the real broker: join, sync, heartbeat, leave."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from herder.member.group_member import GroupMember
from herder.member.membership import (
    CoordinatorUnavailable,
    Generation,
    HeartbeatOutcome,
    JoinedMembers,
)
from herder.member.static_probe import subscribing
from protocol import PROTOCOL_NAME
from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.polling import wait_until_async
from tests.support.processes import free_port, running_broker

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(each_broker: EmbeddedBroker) -> EmbeddedBroker:
    """In the Tansu smoke set: every test here runs on Apache Kafka and on Tansu."""
    return each_broker


def member(broker: EmbeddedBroker, group: str) -> GroupMember:
    return GroupMember(
        broker.bootstrap_servers,
        group,
        PROTOCOL_NAME,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=15_000,
    )


async def echo_leader(members: JoinedMembers) -> Mapping[str, bytes]:
    """Tell every member which metadata the leader saw from whom."""
    seen = b",".join(sorted(members.metadata.values()))
    return {member_id: seen for member_id in members.metadata}


async def in_a_generation_of_both(member: GroupMember, metadata: bytes) -> Generation:
    """Join, and join again on the heartbeat's word, until a generation holds both members.

    Joins sent together need not land in one generation: with Apache Kafka's
    `group.initial.rebalance.delay.ms=0` the first member can complete a generation alone
    before the second's JoinGroup arrives (a CI run saw generations 1 and 2); the second's
    join then starts another, which the first hears of from its heartbeat."""
    joined = await member.join(subscribing(metadata), echo_leader)
    while joined.assignment != b"first,second":
        if await member.heartbeat() is HeartbeatOutcome.OK:
            await asyncio.sleep(0.1)
        else:
            joined = await member.join(subscribing(metadata), echo_leader)
    return joined


async def test_two_members_share_a_generation_and_rebalance_on_leave(
    broker: EmbeddedBroker,
) -> None:
    group = f"membership-{free_port()}"
    first, second = member(broker, group), member(broker, group)
    await first.start()
    await second.start()
    try:
        one, two = await asyncio.wait_for(
            asyncio.gather(
                in_a_generation_of_both(first, b"first"), in_a_generation_of_both(second, b"second")
            ),
            60,
        )
        assert one.generation == two.generation
        assert one.leader_id == two.leader_id
        assert one.is_leader != two.is_leader
        assert one.assignment == two.assignment == b"first,second"
        assert await first.heartbeat() is HeartbeatOutcome.OK

        await second.leave()
        outcomes = [await first.heartbeat() for _ in range(3)]
        assert HeartbeatOutcome.REJOIN in outcomes

        alone = await first.join(subscribing(b"first-again"), echo_leader)
        assert alone.is_leader
        assert alone.generation > one.generation
        assert alone.assignment == b"first-again"
    finally:
        await first.close()
        await second.close()


async def test_a_leader_leaving_during_a_rebalance_does_not_strand_the_group(
    broker: EmbeddedBroker,
) -> None:
    """Tansu keeps a departed leader as leader of a forming generation; the follower
    would then wait for an assignment forever. The leader leaves only once its heartbeat
    says the follower's rejoin has started that generation."""
    group = f"leader-leaves-{free_port()}"
    first, second = member(broker, group), member(broker, group)
    await first.start()
    await second.start()
    try:
        one, _ = await asyncio.gather(
            first.join(subscribing(b"first"), echo_leader),
            second.join(subscribing(b"second"), echo_leader),
        )
        leader, follower = (first, second) if one.is_leader else (second, first)
        rejoin = asyncio.create_task(follower.join(subscribing(b"follower-again"), echo_leader))
        await wait_until_async(
            leader.heartbeat,
            30,
            what="the leader to hear of the follower's rejoin",
            until=lambda outcome: outcome is HeartbeatOutcome.REJOIN,
        )
        await leader.leave()

        async with asyncio.timeout(60):
            alone = await rejoin
        assert alone.is_leader
        assert alone.assignment == b"follower-again"
    finally:
        await first.close()
        await second.close()


async def test_unreachable_broker_raises_coordinator_unavailable() -> None:
    lonely = GroupMember(
        f"127.0.0.1:{free_port()}",
        "nobody",
        PROTOCOL_NAME,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=15_000,
    )
    with pytest.raises(CoordinatorUnavailable):
        await lonely.start()


async def test_the_first_group_on_a_new_kafka_cluster_waits_for_its_coordinator(
    tmp_path: Path,
) -> None:
    """A new Apache Kafka cluster answers FindCoordinator with COORDINATOR_NOT_AVAILABLE
    while it creates `__consumer_offsets`; that is a busy broker, not an absent one."""
    with running_broker(tmp_path, "kafka") as fresh:
        lonely = member(fresh, "first-group")
        await lonely.start()
        try:
            joined = await lonely.join(subscribing(b"only"), echo_leader)
            assert joined.is_leader
            assert joined.assignment == b"only"
        finally:
            await lonely.close()


async def test_a_static_member_probes_whether_its_changed_subscription_is_honoured(
    broker: EmbeddedBroker,
) -> None:
    """Apache Kafka rebalances when a static member's subscription changes (KIP-345);
    Tansu answers with the generation it has, and its workers must join as dynamic."""
    group = f"probe-{free_port()}"
    static = GroupMember(
        broker.bootstrap_servers,
        group,
        PROTOCOL_NAME,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=15_000,
        instance_id="pod-0",
    )
    await static.start()
    try:
        honoured = await static.static_rejoin_honoured()
    finally:
        await static.close()
    assert honoured is (broker.engine.name == "kafka")
