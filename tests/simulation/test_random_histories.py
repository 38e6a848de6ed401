"""Random histories over the invariants (see invariants.py), >= 300 per run.

A history is a list of abstract steps; each step picks its target among the workers and
connectors that exist when it runs, so every drawn history is valid and shrinks well.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.simulation.cluster import SimCluster
from tests.simulation.worker import Rebalancing

HISTORIES = 500
NAMES = ["W1", "W2", "W3", "W4", "W5"]
CONNECTORS = ["A", "B", "C", "D"]


@dataclass(frozen=True)
class Step:
    verb: str
    pick: int
    amount: int


steps = st.builds(
    Step,
    st.sampled_from(
        [
            "join",
            "leave",
            "retire",
            "crash",
            "bounce",
            "bounce-crash",
            "connector",
            "delete",
            "lag",
            "fail-sync",
            "advance",
            "settle",
        ]
    ),
    st.integers(0, 9),
    st.integers(0, 40),
)


def play(cluster: SimCluster, step: Step) -> None:
    alive = [n for n in NAMES if n in cluster.workers and cluster.workers[n].alive]
    idle = [n for n in NAMES if n not in alive]
    configured = sorted(cluster.config.task_counts())
    verb = step.verb
    if verb == "join" or (not alive and verb not in ("connector", "delete", "advance")):
        if idle:
            cluster.join(idle[step.pick % len(idle)])
        return
    target = alive[step.pick % len(alive)] if alive else ""
    seconds = step.amount * 1_000
    if verb == "leave":
        cluster.leave(target)
    elif verb == "retire":
        cluster.retire(target)
    elif verb == "crash":
        cluster.crash(target)
    elif verb in ("bounce", "bounce-crash"):
        cluster.bounce(target, 1_000 + seconds, crash=verb == "bounce-crash")
    elif verb == "connector":
        cluster.put_connector(CONNECTORS[step.pick % len(CONNECTORS)], step.amount % 7)
    elif verb == "delete" and configured:
        cluster.delete_connector(configured[step.pick % len(configured)])
    elif verb == "lag":
        cluster.lag_config(target, 1_000 + seconds // 4)
    elif verb == "fail-sync":
        cluster.fail_next_sync(target)
    elif verb == "advance":
        cluster.advance(seconds)
    elif verb == "settle":
        cluster.settle()


def test_random_histories_keep_the_invariants() -> None:
    played: list[int] = []

    @settings(max_examples=HISTORIES, deadline=None, database=None)
    @given(
        st.sampled_from(list(Rebalancing)),
        st.integers(1, len(NAMES)),
        st.dictionaries(st.sampled_from(CONNECTORS), st.integers(0, 8)),
        st.lists(steps, min_size=3, max_size=30),
    )
    def history(
        rebalancing: Rebalancing, workers: int, config: dict[str, int], story: list[Step]
    ) -> None:
        cluster = SimCluster(rebalancing, max_delay_ms=20_000)
        cluster.join(*NAMES[:workers])
        for connector, tasks in sorted(config.items()):
            cluster.put_connector(connector, tasks)
        cluster.settle()
        for step in story:
            play(cluster, step)
        cluster.settle()
        if not cluster.allocations():
            cluster.join(next(n for n in NAMES if not cluster.workers[n].alive))
            cluster.settle()
        played.append(len(story))

    history()
    assert len(played) >= HISTORIES
