"""REST writes answer once the config topic has them (issue 34, item 1), through the whole
herder against in-memory stores and a one-member group: a create answers while a task's
start hangs and while the round an earlier create asked for is still under way (a
refused config is refused at once, before anything is written); creates that arrive
together are written together (all their records sent before the first is acknowledged,
one read to the end of the topic among them) and share one round; of two creates of one
name sent together, the second is refused as Connect refuses it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiokafka.errors import KafkaError

from herder.errors import ConnectorExists, InvalidConnectorConfig
from herder.member.membership import Generation, LeaderCallback, Subscribe
from herder.stores.kafka_log import RecordHandler
from protocol.messages import ConnectorTaskId
from tests.unit.herder.memory_cluster import (
    LoneCoordinator,
    MemoryLog,
    RecordingRuntime,
    running_herder,
    until,
)

CONFIG = {"connector.class": "counting", "tasks.max": "1"}


@dataclass
class HeldStarts(RecordingRuntime):
    """A task's start hangs until `launch` is set, as a Spark query's start does under
    load; `begun` are the starts asked for, hanging or not."""

    launch: asyncio.Event = field(default_factory=asyncio.Event)
    begun: list[ConnectorTaskId] = field(default_factory=list)

    async def start_task(
        self,
        task_id: ConnectorTaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        generation: int,
    ) -> None:
        self.begun.append(task_id)
        await self.launch.wait()
        await super().start_task(task_id, connector_config, task_config, generation)


class CountedJoins(LoneCoordinator):
    """Says how many joins wait for `joinable` (a round under way)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = 0

    async def join(
        self, subscribe: Subscribe, on_leader: LeaderCallback, on_leader_sync_failed: object
    ) -> Generation:
        self.waiting += 1
        try:
            await self.joinable.wait()
        finally:
            self.waiting -= 1
        return await super().join(subscribe, on_leader, lambda: None)


class HeldAcks(MemoryLog):
    """A config topic whose broker holds its acknowledgements while `acks` is clear;
    `reads_to_end` counts the reads to its end (each a round trip to a real broker)."""

    def __init__(self, on_record: RecordHandler) -> None:
        super().__init__(on_record)
        self.acks = asyncio.Event()
        self.acks.set()
        self.reads_to_end = 0
        self.sent: list[str] = []
        self._acking: set[asyncio.Task[None]] = set()

    async def send_soon(self, key: bytes, value: bytes | None) -> asyncio.Future[int]:
        offset = await self.send(key, value)
        self.sent.append(key.decode())
        acked: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def acknowledge() -> None:
            await self.acks.wait()
            acked.set_result(offset)

        acking = asyncio.create_task(acknowledge())
        self._acking.add(acking)
        acking.add_done_callback(self._acking.discard)
        return acked

    async def read_to_end(self, timeout_s: float = 30.0) -> int:
        self.reads_to_end += 1
        return await super().read_to_end(timeout_s)


def tasks(*names: str) -> set[ConnectorTaskId]:
    return {ConnectorTaskId(name, 0) for name in names}


async def test_a_create_answers_while_a_task_starts_and_a_round_is_under_way(
    tmp_path: Path,
) -> None:
    coordinator, runtime = CountedJoins(), HeldStarts()
    async with running_herder(tmp_path, coordinator, runtime=runtime) as (herder, _):
        await herder.admin.create_connector("first", CONFIG)
        await until(lambda: tasks("first") <= set(runtime.begun), "the first task's start")
        generation = coordinator.generation
        coordinator.joinable.clear()
        await herder.admin.create_connector("second", CONFIG)
        await until(lambda: coordinator.waiting == 1, "the round the second create asks for")

        third = await herder.admin.create_connector("third", CONFIG)

        assert third.tasks == (ConnectorTaskId("third", 0),)
        assert coordinator.waiting == 1 and coordinator.generation == generation
        assert not runtime.launch.is_set() and not runtime.running
        with pytest.raises(InvalidConnectorConfig, match="bad: refused"):
            await herder.admin.create_connector("refused", {**CONFIG, "bad": "x"})
        assert herder.admin.connector_names() == ["first", "second", "third"]
        coordinator.joinable.set()
        runtime.launch.set()
        await until(lambda: set(runtime.running) == tasks("first", "second", "third"), "all run")
        assert coordinator.generation == generation + 1, "the second and third in one round"


async def test_creates_that_arrive_together_share_one_round(tmp_path: Path) -> None:
    coordinator, runtime = CountedJoins(), HeldStarts()
    runtime.launch.set()
    async with running_herder(tmp_path, coordinator, runtime=runtime) as (herder, _):
        await until(lambda: herder.ready, "the first round")
        generation = coordinator.generation
        names = [f"c{i}" for i in range(4)]
        await asyncio.gather(*(herder.admin.create_connector(n, CONFIG) for n in names))
        await until(lambda: set(runtime.running) == tasks(*names), "every task runs")
        assert coordinator.generation == generation + 1


async def test_creates_that_arrive_together_are_written_together(tmp_path: Path) -> None:
    coordinator, runtime = CountedJoins(), HeldStarts()
    topics: list[HeldAcks] = []

    def config_topic(on_record: RecordHandler) -> HeldAcks:
        topics.append(HeldAcks(on_record))
        return topics[-1]

    async with running_herder(tmp_path, coordinator, runtime=runtime, config_log=config_topic) as (
        herder,
        _,
    ):
        await herder.admin.create_connector("first", CONFIG)
        await until(lambda: tasks("first") <= set(runtime.begun), "the first task's start")
        generation = coordinator.generation
        coordinator.joinable.clear()
        (topic,) = topics
        topic.acks.clear()
        try:
            reads = topic.reads_to_end
            names = [f"c{i}" for i in range(8)]
            creates = [asyncio.create_task(herder.admin.create_connector(n, CONFIG)) for n in names]
            commits = {f"commit-{name}" for name in names}
            await until(lambda: commits <= set(topic.sent), "every create's records sent")

            assert not any(create.done() for create in creates), "none is acknowledged yet"
            assert topic.reads_to_end == reads + 1
        finally:  # a failed assertion must not leave the herder's stop waiting for them
            topic.acks.set()
            coordinator.joinable.set()
            runtime.launch.set()
        views = await asyncio.gather(*creates)
        assert [view.tasks for view in views] == [(ConnectorTaskId(n, 0),) for n in names]
        await until(lambda: set(runtime.running) == tasks("first", *names), "all run")
        assert coordinator.generation == generation + 1, "the eight in one round"


async def test_two_creates_of_one_name_in_one_batch_are_one_create_and_one_conflict(
    tmp_path: Path,
) -> None:
    async with running_herder(tmp_path) as (herder, _):
        await until(lambda: herder.ready, "the first round")
        answers = await asyncio.gather(
            herder.admin.create_connector("twice", CONFIG),
            herder.admin.create_connector("twice", {**CONFIG, "tasks.max": "2"}),
            return_exceptions=True,
        )
        assert isinstance(answers[1], ConnectorExists)
        assert herder.admin.connector("twice").config == {**CONFIG, "name": "twice"}


class RefusingBroker(MemoryLog):
    """A config topic whose broker refuses the next record while `refuse` is set."""

    refuse = False

    async def send_soon(self, key: bytes, value: bytes | None) -> asyncio.Future[int]:
        if not self.refuse:
            return await super().send_soon(key, value)
        refused: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        refused.set_exception(KafkaError("NOT_ENOUGH_REPLICAS"))
        return refused


async def test_a_write_whose_records_the_broker_refuses_fails_and_the_next_one_runs(
    tmp_path: Path,
) -> None:
    topics: list[RefusingBroker] = []

    def config_topic(on_record: RecordHandler) -> RefusingBroker:
        topics.append(RefusingBroker(on_record))
        return topics[-1]

    async with running_herder(tmp_path, config_log=config_topic) as (herder, _):
        await until(lambda: herder.ready, "the first round")
        topics[0].refuse = True
        with pytest.raises(KafkaError, match="NOT_ENOUGH_REPLICAS"):
            await herder.admin.create_connector("refused", CONFIG)
        topics[0].refuse = False

        view = await herder.admin.create_connector("written", CONFIG)

        assert view.tasks == (ConnectorTaskId("written", 0),)
        assert herder.admin.connector_names() == ["written"]
