"""The simulator's checks catch assignors that break the invariants."""

from __future__ import annotations

import dataclasses

import pytest

from herder.assignor import Assignor, EagerAssignor, GroupRound, IncrementalCooperativeAssignor
from protocol.messages import Allocation, Assignment, ConnectorTaskId
from tests.simulation.cluster import SimCluster
from tests.simulation.ledger import InvariantViolation
from tests.simulation.script import run_script
from tests.simulation.worker import AssignorFactory, Rebalancing

STABLE = "join W1 W2 W3\nconnector A 6\nsettle\n"


class Tampered:
    """Wraps a real assignor and rewrites its answers with `tamper`."""

    def __init__(self, inner: Assignor, tamper: type[Tamper]) -> None:
        self._inner = inner
        self._tamper = tamper

    def assign(self, round: GroupRound) -> dict[str, Assignment]:
        return self._tamper.rewrite(round, self._inner.assign(round))

    def forget(self) -> None:
        self._inner.forget()


class Tamper:
    @staticmethod
    def rewrite(round: GroupRound, answers: dict[str, Assignment]) -> dict[str, Assignment]:
        return answers


def tampered(tamper: type[Tamper]) -> AssignorFactory:
    return lambda deadline: Tampered(
        IncrementalCooperativeAssignor(30_000, inherited_deadline_ms=deadline), tamper
    )


class StartNewTasksTwice(Tamper):
    @staticmethod
    def rewrite(round: GroupRound, answers: dict[str, Assignment]) -> dict[str, Assignment]:
        new = Allocation()
        for answer in answers.values():
            new = new.union(answer.assigned)
        return {m: dataclasses.replace(a, assigned=new) for m, a in answers.items()}


class RevokeOnConnectorB(Tamper):
    @staticmethod
    def rewrite(round: GroupRound, answers: dict[str, Assignment]) -> dict[str, Assignment]:
        member = min(round.members)
        running = round.members[member].allocation
        if "B" not in round.snapshot.task_counts or running.is_empty():
            return answers
        victim = Allocation.of(tasks=[min(running.tasks)])
        answers[member] = dataclasses.replace(answers[member], revoked=victim)
        return answers


class PileUpOnOneWorker(EagerAssignor):
    def assign(self, round: GroupRound) -> dict[str, Assignment]:
        answers = super().assign(round)
        everything = Allocation()
        for answer in answers.values():
            everything = everything.union(answer.assigned)
        first = min(answers)
        return {
            m: dataclasses.replace(a, assigned=everything if m == first else Allocation())
            for m, a in answers.items()
        }


def test_starting_an_item_that_runs_elsewhere_is_caught_at_once() -> None:
    cluster = SimCluster(make_assignor=tampered(StartNewTasksTwice))
    with pytest.raises(InvariantViolation, match=r"while W\d runs it"):
        run_script(cluster, STABLE)


def test_stopping_an_item_the_change_does_not_concern_is_caught() -> None:
    cluster = SimCluster(make_assignor=tampered(RevokeOnConnectorB))
    run_script(cluster, STABLE)
    with pytest.raises(InvariantViolation, match="does not concern"):
        run_script(cluster, "connector B 2\nsettle")


def test_an_unbalanced_quiet_group_is_caught() -> None:
    def pile_up(_: int | None) -> Assignor:
        return PileUpOnOneWorker()

    cluster = SimCluster(Rebalancing.EAGER, make_assignor=pile_up)
    with pytest.raises(InvariantViolation, match="unbalanced"):
        run_script(cluster, STABLE)


def test_downtime_counts_configured_items_until_they_do_work() -> None:
    cluster = SimCluster(startup_ms=2_000)
    run_script(cluster, "connector A 1\nadvance 1s\njoin W1\nsettle")
    assert cluster.costs().downtime_s == pytest.approx(2 * (1 + 2))
    assert cluster.ledger.owners == {"A": "W1", ConnectorTaskId("A", 0): "W1"}
