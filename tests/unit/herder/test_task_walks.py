"""Random walks of pauses, resumes, restarts and task config changes against a whole
herder whose task starts hang until a test lets them end, as a Spark query's start does
under load: `herder.tasks.task_work.TaskWork` carries the task machine out with real
concurrency (starts in the background, stops awaited, a group loop between). Whatever
the order, a task never starts while this worker still holds it or starts it, and once
the starts may end it runs the newest config, or is stopped when its connector is
paused; every request after the last start is carried out."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from herder.herder import DistributedHerder
from herder.stores.config_records import RestartRequest, TargetState
from protocol.messages import ConnectorTaskId
from tests.unit.herder.memory_cluster import CountingPlugins, running_herder, until
from tests.unit.herder.test_request_lane import HeldStarts

TASK = ConnectorTaskId("walk", 0)
STEPS = ("pause", "resume", "restart", "reconfigure", "let starts end", "hold starts")


class VersionedPlugins(CountingPlugins):
    """A task's config carries the connector's `v`: a new `v` is a new task config."""

    def task_configs(self, config: Mapping[str, str]) -> list[dict[str, str]]:
        return [{"task": "0", "v": config["v"]}]


@dataclass
class CheckedStarts(HeldStarts):
    """`twice` lists each start asked for while the task was held or starting."""

    twice: list[ConnectorTaskId] = field(default_factory=list)
    under_way: set[ConnectorTaskId] = field(default_factory=set)

    async def start_task(
        self,
        task_id: ConnectorTaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        generation: int,
    ) -> None:
        if task_id in self.running or task_id in self.under_way:
            self.twice.append(task_id)
        self.under_way.add(task_id)
        try:
            await super().start_task(task_id, connector_config, task_config, generation)
        finally:
            self.under_way.discard(task_id)


def shows(herder: DistributedHerder, state: str) -> Callable[[], bool]:
    """Whether the connector's status is `state`: the worker has followed the change (it
    writes the connector's status as it takes the change to its tasks)."""

    def reads() -> bool:
        status = herder.admin.connector_status("walk")
        return status is not None and status.state == state

    return reads


@pytest.mark.parametrize("seed", range(60))
async def test_a_random_walk_ends_with_the_task_as_its_connector_says(
    tmp_path: Path, seed: int
) -> None:
    walk = random.Random(seed)
    runtime = CheckedStarts()
    async with running_herder(tmp_path, runtime=runtime, plugins=VersionedPlugins()) as (
        herder,
        _,
    ):
        await herder.admin.create_connector("walk", {"connector.class": "counting", "v": "0"})
        await until(lambda: runtime.begun == [TASK], "the task's first start")
        version, paused, asked_after = 0, False, 0
        for step in walk.choices(STEPS, k=6):
            if step == "pause" and not paused:
                paused = True
                await herder.admin.set_target_state("walk", TargetState.PAUSED)
                await until(shows(herder, "PAUSED"), "the connector PAUSED")
            elif step == "resume" and paused:
                paused, asked_after = False, len(runtime.begun)
                await herder.admin.set_target_state("walk", TargetState.STARTED)
                await until(shows(herder, "RUNNING"), "the connector RUNNING")
            elif step == "restart":
                asked_after = len(runtime.begun)
                await herder.admin.restart(RestartRequest("walk", task=0))
            elif step == "reconfigure":
                version, asked_after = version + 1, len(runtime.begun)
                config = {"connector.class": "counting", "v": str(version)}
                await herder.admin.put_connector_config("walk", config)
            elif step == "let starts end":
                runtime.launch.set()
            elif step == "hold starts":
                runtime.launch.clear()
        runtime.launch.set()

        def settled() -> bool:
            status = herder.admin.task_status(TASK)
            if paused:
                return (
                    TASK not in runtime.running and status is not None and status.state == "PAUSED"
                )
            return (
                runtime.running.get(TASK, {}).get("v") == str(version)
                and not runtime.under_way
                and status is not None
                and status.state == "RUNNING"
            )

        await until(settled, f"the task as its connector says (seed {seed})")
        assert not runtime.twice
        if not paused:
            assert len(runtime.begun) > asked_after, "a request after the last start was lost"
