"""Loads through the whole herder (v5): a member sends the load it measures with every
join, and a leader reads the members' loads off the wire and gives an overloaded member no
new task while another has room."""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import partial
from itertools import count
from pathlib import Path

import pytest

from herder.herder import DistributedHerder
from protocol.codec import decode_subscription
from protocol.messages import NO_LOAD, OVERLOADED_LOAD
from tests.unit.herder import memory_cluster
from tests.unit.herder.memory_cluster import BYSTANDER, LoneCoordinator, running_herder, until

CONFIG = {"connector.class": "counting", "tasks.max": "2"}


async def test_the_leader_gives_an_overloaded_member_no_new_task(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With a bystander that has room this worker runs one task of two
    (test_herder_loop's leaving leader); overloaded, the bystander gets none, and the
    leader's log says why."""
    caplog.set_level(logging.INFO, logger="herder.member.leader")
    overloaded = replace(BYSTANDER, load=OVERLOADED_LOAD + 200)
    async with running_herder(tmp_path, LoneCoordinator(bystander=overloaded)) as (
        herder,
        runtime,
    ):
        await herder.admin.create_connector("busy", CONFIG)
        await until(lambda: len(runtime.running) == 2, "both tasks here")
        assert len(herder.owned.tasks) == 2
    assert (
        "overloaded, so given no new task while others have room: 127.0.0.1:9 (1200 per mille)"
        in caplog.messages
    )


def failing_measurement() -> int:
    raise ZeroDivisionError("a bug in the measurement")


async def test_a_failed_measurement_joins_without_a_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    herder_with_load = partial(DistributedHerder, load=failing_measurement)
    monkeypatch.setattr(memory_cluster, "DistributedHerder", herder_with_load)
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, _):
        await until(lambda: herder.ready, "the worker joined")
    assert decode_subscription(coordinator.joined_with[0]).load == NO_LOAD


async def test_every_join_sends_the_load_the_worker_measures_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process wires `worker.driver_load` in as `load`; here a counter stands in for
    the measurement, which is asked anew for each JoinGroup."""
    measured = count(100, 100)
    herder_with_load = partial(DistributedHerder, load=lambda: next(measured))
    monkeypatch.setattr(memory_cluster, "DistributedHerder", herder_with_load)
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, _):
        await herder.admin.create_connector("measured", CONFIG)
        await until(lambda: len(coordinator.joined_with) >= 2, "a second join")
    loads = [decode_subscription(sent).load for sent in coordinator.joined_with]
    assert loads == list(range(100, 100 * (len(loads) + 1), 100))
