"""A create whose plugin waits on the outside world to split its work (a Kafka sink lists
its topics' partitions at an address a REST caller named) is answered within a bound and
holds no other write (issue 42, item 2): the plugin's answer is waited for a few seconds
at most, and used whenever it comes. Such a create held the request lane for a minute."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from herder.stores import task_configs
from protocol.messages import ConnectorTaskId
from tests.unit.herder.memory_cluster import (
    CountingPlugins,
    LoneCoordinator,
    running_herder,
    until,
)

CONFIG = {"connector.class": "counting", "tasks.max": "1"}
ANSWERED_WITHIN_S = 10.0


class UnansweredPlugins(CountingPlugins):
    """The `unanswered` connector's plugin splits its work only once `answer` is set."""

    def __init__(self) -> None:
        self.answer = threading.Event()
        self.asked = 0

    def task_configs(self, config: Mapping[str, str]) -> list[dict[str, str]]:
        if config.get("name") == "unanswered":
            self.asked += 1
            self.answer.wait(60)
        return super().task_configs(config)


async def test_a_create_whose_plugin_does_not_answer_is_answered_and_holds_no_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_configs, "ANSWER_WAIT_S", 0.2, raising=False)
    plugins = UnansweredPlugins()
    async with running_herder(tmp_path, LoneCoordinator(), plugins=plugins) as (herder, runtime):
        try:
            created = herder.admin.create_connector("unanswered", CONFIG)
            view = await asyncio.wait_for(created, ANSWERED_WITHIN_S)
            assert view.tasks == ()
            bystander = herder.admin.create_connector("bystander", CONFIG)
            await asyncio.wait_for(bystander, ANSWERED_WITHIN_S)
            await until(lambda: ConnectorTaskId("bystander", 0) in runtime.running, "bystander")
            assert plugins.asked == 1, "asked once, however often it was waited for"

            plugins.answer.set()
            await herder.admin.create_connector("third", CONFIG)

            late = ConnectorTaskId("unanswered", 0)
            await until(lambda: late in runtime.running, "the late answer's task to run")
            assert plugins.asked == 1, "the late answer was used, not asked for again"
        finally:
            plugins.answer.set()
