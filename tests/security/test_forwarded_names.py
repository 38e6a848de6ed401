"""Writes a follower forwards to the leader reach the connector they name, and no other.

Names may hold `?`, `#`, `%` and spaces. A follower that sent the leader the decoded path
turned `DELETE /connectors/victim%3Fx` into `DELETE /connectors/victim`: a caller could
delete, reconfigure or stop a connector by naming another one. Two real workers of one
group on a real broker; every write goes to the follower.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config, worker_pair
from tests.support.processes import WorkerProcess, free_port
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


class Pair:
    def __init__(self, leader: str, follower: WorkerProcess) -> None:
        assert follower.url != leader
        self.leader = Api(leader)
        self.follower = Api(follower.url)


@pytest.fixture(scope="module")
def pair(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    root = tmp_path_factory.mktemp("forwarding")
    with worker_pair(broker, root, [f"group.id=forwarding-{free_port()}"]) as workers:
        _, _, leader, follower = workers
        yield Pair(leader, follower)


def path_of(name: str) -> str:
    return f"/connectors/{quote(name, safe='')}"


@pytest.mark.parametrize(
    ("hostile", "victim"),
    [
        ("victim?x", "victim"),
        ("victim#x", "victim"),
        ("victim%20x", "victim x"),
        ("50% off?", "50% off"),
    ],
)
def test_a_forwarded_write_reaches_exactly_the_named_connector(
    pair: Pair, tmp_path: Path, hostile: str, victim: str
) -> None:
    victim_config = generator_config(tmp_path / "victim", 1)
    for name, config in ((victim, victim_config), (hostile, generator_config(tmp_path / "h", 1))):
        body = {"name": name, "config": config, "initial_state": "STOPPED"}
        pair.follower.call("POST", "/connectors", 201, json=body)
    try:
        assert {victim, hostile} <= set(pair.leader.call("GET", "/connectors", 200).json())

        changed = generator_config(tmp_path / "changed", 1)
        updated = pair.follower.call("PUT", f"{path_of(hostile)}/config", 200, json=changed)
        assert updated.json()["name"] == hostile
        stored = pair.leader.call("GET", f"{path_of(hostile)}/config", 200).json()
        assert stored["output.path"] == str(tmp_path / "changed")

        pair.follower.call("DELETE", path_of(hostile), 204)

        names = pair.leader.call("GET", "/connectors", 200).json()
        assert hostile not in names and victim in names
        kept = pair.leader.call("GET", f"{path_of(victim)}/config", 200).json()
        assert kept == {**victim_config, "name": victim}
    finally:
        for name in (victim, hostile):
            httpx.delete(f"{pair.leader.url}{path_of(name)}", timeout=60)
