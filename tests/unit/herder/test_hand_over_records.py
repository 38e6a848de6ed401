"""Hand-overs outlive the leader that planned them: recorded in the config topic."""

from __future__ import annotations

from herder.assignor import HandedOver
from herder.member.leader import hand_over_changes
from herder.stores.config_store import ConfigStore
from protocol.messages import Allocation, ConnectorTaskId, Subscription
from tests.unit.herder.memory_cluster import MemoryLog

DELAY = 60_000


def member(name: str, tasks: tuple[int, ...] = (), leaving: bool = False) -> Subscription:
    return Subscription(
        version=2,
        max_version=2,
        worker_id=f"{name}:8083",
        url=f"http://{name}:8083",
        config_offset=3,
        allocation=Allocation.of((), (ConnectorTaskId("A", t) for t in tasks)),
        instance_id=name,
        leaving=leaving,
    )


def test_a_leaving_member_with_tasks_is_recorded_under_its_identity() -> None:
    members = {"m1": member("w1", (0, 1)), "m2": member("w2", (2, 3), leaving=True)}
    assert hand_over_changes(members, {}, 1_000, DELAY) == {
        "w2": HandedOver(1_000 + DELAY, {"A": frozenset({2, 3})})
    }


def test_a_leaving_member_that_runs_nothing_any_more_keeps_its_record() -> None:
    recorded = {"w2": HandedOver(1_000 + DELAY, {"A": frozenset({2, 3})})}
    members = {"m1": member("w1", (0, 1, 2, 3)), "m2": member("w2", leaving=True)}
    assert hand_over_changes(members, recorded, 2_000, DELAY) == {}


def test_a_record_is_cleared_when_its_identity_is_back_or_its_time_is_up() -> None:
    recorded = {
        "w2": HandedOver(1_000 + DELAY, {"A": frozenset({2})}),
        "w3": HandedOver(500, {"A": frozenset({3})}),
    }
    members = {"m1": member("w1", (0, 1, 2, 3)), "m2": member("w2")}
    assert hand_over_changes(members, recorded, 2_000, DELAY) == {"w2": None, "w3": None}


async def test_the_config_store_keeps_the_records_and_clears_them() -> None:
    store = ConfigStore(MemoryLog)
    handed = HandedOver(61_000, {"A": frozenset({2, 3}), "B": frozenset({0})})
    await store.put_handed_over("w2", handed)
    await store.read_to_end()
    assert store.snapshot().handed_over == {"w2": handed}
    await store.put_handed_over("w2", None)
    await store.read_to_end()
    assert store.snapshot().handed_over == {}
