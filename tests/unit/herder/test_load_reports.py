"""Loads through the whole herder (v5): a leader reads the members' loads off the wire
and gives an overloaded member no new task while another has room."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from protocol.messages import OVERLOADED_LOAD
from tests.unit.herder.memory_cluster import BYSTANDER, LoneCoordinator, running_herder, until

CONFIG = {"connector.class": "counting", "tasks.max": "2"}


async def test_the_leader_gives_an_overloaded_member_no_new_task(tmp_path: Path) -> None:
    """With a bystander that has room this worker runs one task of two
    (test_herder_loop's leaving leader); overloaded, the bystander gets none."""
    overloaded = replace(BYSTANDER, load=OVERLOADED_LOAD + 200)
    async with running_herder(tmp_path, LoneCoordinator(bystander=overloaded)) as (
        herder,
        runtime,
    ):
        await herder.admin.create_connector("busy", CONFIG)
        await until(lambda: len(runtime.running) == 2, "both tasks here")
        assert len(herder.owned.tasks) == 2
