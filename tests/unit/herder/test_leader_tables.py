"""The leader names connectors by index only to members holding its connector table, and
a round with a member whose table it does not hold assigns nothing: everyone catches up on
the config and rejoins, so no index is ever read against other names."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from herder.member.leader import LeaderPlanner
from herder.member.membership import JoinedMembers
from herder.stores.config_records import ConfigSnapshot
from protocol.codec import decode_assignment, encode_subscription
from protocol.connector_table import KNOWN_TABLES, NO_TABLE
from protocol.messages import (
    EMPTY_ALLOCATION,
    Allocation,
    Assignment,
    AssignmentError,
    ConnectorTaskId,
    Subscription,
)

NAMES = ["alpha", "beta"]
SNAPSHOT = ConfigSnapshot(
    offset=9,
    connectors={name: {} for name in NAMES},
    task_configs={name: ({}, {}) for name in NAMES},
)


def member(name: str, table: int, owned: Allocation = EMPTY_ALLOCATION) -> Subscription:
    return Subscription(
        4, 4, name, f"http://{name}", 9, owned, incarnation=name, connector_table=table
    )


def joined(*subs: Subscription) -> JoinedMembers:
    """The first member leads."""
    return JoinedMembers(
        generation=3,
        leader_id=subs[0].worker_id,
        metadata={sub.worker_id: encode_subscription(sub) for sub in subs},
        instance_ids={sub.worker_id: None for sub in subs},
    )


def answers(members: JoinedMembers) -> dict[str, Assignment]:
    planner = LeaderPlanner(leader_max_version=4, max_delay_ms=0)
    encoded = planner.plan(members, f"http://{members.leader_id}", SNAPSHOT, now_ms=0)
    return {m: decode_assignment(data) for m, data in encoded.items()}


@pytest.fixture
def table() -> Iterator[int]:
    yield KNOWN_TABLES.add(NAMES)


def test_members_holding_the_leaders_table_get_indexes_the_others_names(table: int) -> None:
    other = KNOWN_TABLES.add([*NAMES, "gamma"])
    answered = answers(joined(member("a", table), member("b", other), member("c", NO_TABLE)))
    assert {m: a.connector_table for m, a in answered.items()} == {
        "a": table,
        "b": NO_TABLE,
        "c": NO_TABLE,
    }
    assert not any(a.failed for a in answered.values())
    everything = Allocation()
    for answer in answered.values():
        everything = everything.union(answer.assigned)
    assert everything == SNAPSHOT.configured()


def test_a_member_indexing_a_table_the_leader_lacks_makes_everyone_catch_up(table: int) -> None:
    unknown = KNOWN_TABLES.add(["delta", "epsilon"])
    stale = member("b", unknown, Allocation.of(["delta"], [ConnectorTaskId("delta", 0)]))
    members = joined(member("a", table), stale)
    KNOWN_TABLES.discard(unknown)
    answered = answers(members)
    assert {a.error for a in answered.values()} == {AssignmentError.CONFIG_MISMATCH}
    assert all(a.assigned.is_empty() for a in answered.values())
