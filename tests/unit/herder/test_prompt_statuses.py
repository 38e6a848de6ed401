"""A connector's state is reported as soon as the herder reads it from the config topic,
not after the rebalance that a stop or a resume brings about (seconds on a real broker)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from herder.herder import DistributedHerder
from herder.stores.config_records import TargetState
from tests.unit.herder.memory_cluster import LoneCoordinator, running_herder, until
from worker.plugins.task_state import TaskState

CONFIG = {"connector.class": "counting", "tasks.max": "2"}


def connector_reads(herder: DistributedHerder, state: TaskState) -> Callable[[], bool]:
    def reads() -> bool:
        status = herder.admin.connector_status("c")
        return status is not None and status.state is state

    return reads


async def test_a_stop_and_a_resume_are_reported_before_their_rebalance(tmp_path: Path) -> None:
    coordinator = LoneCoordinator()
    async with running_herder(tmp_path, coordinator) as (herder, runtime):
        await herder.admin.create_connector("c", CONFIG)
        await until(lambda: len(runtime.running) == 2, "both tasks running")
        await until(connector_reads(herder, TaskState.RUNNING), "the connector RUNNING")
        generation = coordinator.generation
        coordinator.joinable.clear()

        await herder.admin.set_target_state("c", TargetState.STOPPED)
        await until(connector_reads(herder, TaskState.STOPPED), "STOPPED before the rebalance")
        assert coordinator.generation == generation, "the rebalance was held back"

        coordinator.joinable.set()
        await until(lambda: not runtime.running, "the stopped connector's tasks revoked")
        generation = coordinator.generation
        coordinator.joinable.clear()
        await herder.admin.set_target_state("c", TargetState.STARTED)
        await until(connector_reads(herder, TaskState.RUNNING), "RUNNING before the rebalance")
        assert coordinator.generation == generation
        coordinator.joinable.set()
        await until(lambda: len(runtime.running) == 2, "the resumed tasks running again")
