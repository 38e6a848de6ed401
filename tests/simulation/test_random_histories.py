"""Random histories over the invariants (see invariants.py), 300 per run, drawn by a
Hypothesis state machine.

A history starts from a settled group of one to five workers and up to four connectors,
whose workers either report no load or each run a drawn number of tasks on cadence
(their load says so, and the leader closes an overloaded one to new tasks), then takes
up to 30 steps: workers join, leave, retire, crash or bounce, connectors are
created, resized and deleted, a worker reads the config topic late or fails a sync, time
passes, the group settles. A step that acts on a worker or a connector runs only while
one exists (its precondition) and picks among those, so every history is valid and
shrinks well.

The simulator checks invariants 1 and 3 while each step runs and invariant 2 whenever the
group settles; after each step the machine checks that the workers and the ledger agree
on who runs what. Every history ends by settling with at least one worker up, so the
group must end up running everything configured, balanced.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from tests.simulation.cluster import SimCluster
from tests.simulation.worker import Rebalancing

HISTORIES = 300
STEPS = 30
NAMES = ["W1", "W2", "W3", "W4", "W5"]
CONNECTORS = ["A", "B", "C", "D"]
MAX_DELAY_MS = 20_000

P = ParamSpec("P")


def step(
    body: Callable[Concatenate[RandomHistory, P], None],
) -> Callable[Concatenate[RandomHistory, P], None]:
    """A step of the history: while it runs the cluster is not at rest, so if it fails,
    the history's end does not settle a cluster stopped half-way through a step (which
    would bury the step's failure under a second one)."""

    @functools.wraps(body)
    def run(history: RandomHistory, /, *args: P.args, **kwargs: P.kwargs) -> None:
        history.at_rest = False
        body(history, *args, **kwargs)
        history.at_rest = True

    return run


@settings(max_examples=HISTORIES, stateful_step_count=STEPS, deadline=None, database=None)
class RandomHistory(RuleBasedStateMachine):
    cluster: SimCluster

    def __init__(self) -> None:
        super().__init__()
        self.at_rest = False
        """Whether every step so far ran to its end (False until the group is set up)."""
        self.capacities: dict[str, int] = {}
        """How many tasks each worker runs on cadence; empty: no worker reports a load."""

    def alive(self) -> list[str]:
        """Running workers, a retiring one included (it runs until it has handed over)."""
        workers = self.cluster.workers
        return [name for name in NAMES if name in workers and workers[name].alive]

    def idle(self) -> list[str]:
        """Workers never started, stopped, or down in the middle of a bounce."""
        alive = self.alive()
        return [name for name in NAMES if name not in alive]

    def configured(self) -> list[str]:
        return sorted(self.cluster.config.task_counts())

    @initialize(
        rebalancing=st.sampled_from(Rebalancing),
        workers=st.integers(1, len(NAMES)),
        connectors=st.dictionaries(st.sampled_from(CONNECTORS), st.integers(0, 8)),
        capacities=st.none() | st.lists(st.integers(0, 6), min_size=len(NAMES)),
    )
    @step
    def a_settled_group(
        self,
        rebalancing: Rebalancing,
        workers: int,
        connectors: dict[str, int],
        capacities: list[int] | None,
    ) -> None:
        self.cluster = SimCluster(rebalancing, max_delay_ms=MAX_DELAY_MS)
        self.capacities = dict(zip(NAMES, capacities or [], strict=False))
        for name in NAMES[:workers]:
            self._join(name)
        for name, tasks in sorted(connectors.items()):
            self.cluster.put_connector(name, tasks)
        self.cluster.settle()

    @precondition(lambda self: self.idle())
    @rule(data=st.data())
    @step
    def join(self, data: st.DataObject) -> None:
        self._join(data.draw(st.sampled_from(self.idle()), label="worker"))

    def _join(self, name: str) -> None:
        self.cluster.join(name, capacity=self.capacities.get(name))

    @precondition(lambda self: self.alive())
    @rule(data=st.data())
    @step
    def leave(self, data: st.DataObject) -> None:
        self.cluster.leave(data.draw(st.sampled_from(self.alive()), label="worker"))

    @precondition(lambda self: self.alive())
    @rule(data=st.data())
    @step
    def retire(self, data: st.DataObject) -> None:
        self.cluster.retire(data.draw(st.sampled_from(self.alive()), label="worker"))

    @precondition(lambda self: self.alive())
    @rule(data=st.data())
    @step
    def crash(self, data: st.DataObject) -> None:
        self.cluster.crash(data.draw(st.sampled_from(self.alive()), label="worker"))

    @precondition(lambda self: self.alive())
    @rule(data=st.data(), down_ms=st.integers(1_000, 41_000), crash=st.booleans())
    @step
    def bounce(self, data: st.DataObject, down_ms: int, crash: bool) -> None:
        worker = data.draw(st.sampled_from(self.alive()), label="worker")
        self.cluster.bounce(worker, down_ms, crash=crash)

    @rule(name=st.sampled_from(CONNECTORS), tasks=st.integers(0, 6))
    @step
    def put_connector(self, name: str, tasks: int) -> None:
        self.cluster.put_connector(name, tasks)

    @precondition(lambda self: self.configured())
    @rule(data=st.data())
    @step
    def delete_connector(self, data: st.DataObject) -> None:
        connector = data.draw(st.sampled_from(self.configured()), label="connector")
        self.cluster.delete_connector(connector)

    @precondition(lambda self: self.alive())
    @rule(data=st.data(), lag_ms=st.integers(1_000, 11_000))
    @step
    def lag_config(self, data: st.DataObject, lag_ms: int) -> None:
        worker = data.draw(st.sampled_from(self.alive()), label="worker")
        self.cluster.lag_config(worker, lag_ms)

    @precondition(lambda self: self.alive())
    @rule(data=st.data())
    @step
    def fail_next_sync(self, data: st.DataObject) -> None:
        self.cluster.fail_next_sync(data.draw(st.sampled_from(self.alive()), label="worker"))

    @rule(ms=st.integers(0, 40_000))
    @step
    def advance(self, ms: int) -> None:
        self.cluster.advance(ms)

    @rule()
    @step
    def settle(self) -> None:
        self.cluster.settle()

    @invariant()
    def workers_and_ledger_agree(self) -> None:
        """Invariant 1 from the workers' side: an item runs on at most one live worker,
        and on the one the ledger names; a stopped worker runs nothing."""
        held = [
            (item, name)
            for name, worker in sorted(self.cluster.workers.items())
            for item in worker.running
        ]
        assert len(dict(held)) == len(held), f"an item runs on two workers: {sorted(held)}"
        assert dict(held) == self.cluster.ledger.owners
        assert all(self.cluster.workers[name].alive for _, name in held), held

    def teardown(self) -> None:
        if not self.at_rest:
            return
        self.cluster.settle()
        if not self.cluster.allocations():
            self._join(self.idle()[0])
            self.cluster.settle()


TestRandomHistories = RandomHistory.TestCase
