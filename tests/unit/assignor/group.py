"""A hand-driven group for assignor unit tests: members apply what the leader answers.

It keeps what each member runs, builds the next round from it, and applies each answer the
way a cooperative worker does (stop revoked, start assigned), so tests read as a sequence
of rounds with named members.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from herder.assignor import Assignor, ClusterSnapshot, GroupRound, HandedOver
from protocol.messages import (
    EMPTY_ALLOCATION,
    NO_LOAD,
    Allocation,
    Assignment,
    ConnectorTaskId,
    Subscription,
)


def task(name: str) -> ConnectorTaskId:
    """`A-1` -> task 1 of connector A."""
    connector, number = name.rsplit("-", 1)
    return ConnectorTaskId(connector, int(number))


def items(*names: str) -> Allocation:
    """`items("A", "A-0", "B-1")`: names with a dash are tasks, the others connectors."""
    return Allocation.of((n for n in names if "-" not in n), (task(n) for n in names if "-" in n))


def subscription(
    member: str,
    allocation: Allocation = EMPTY_ALLOCATION,
    *,
    config_offset: int = 10,
    identity: str | None = None,
    leaving: bool = False,
    version: int = 2,
    load: int = NO_LOAD,
) -> Subscription:
    return Subscription(
        version=version,
        max_version=version,
        worker_id=member,
        url=f"http://{identity or member}:8083",
        config_offset=config_offset,
        allocation=allocation if version else EMPTY_ALLOCATION,
        leaving=leaving,
        load=load,
    )


@dataclass
class Group:
    """Members by id; `identities` maps a member id to the worker it runs in (its URL)."""

    assignor: Assignor
    task_counts: dict[str, int]
    config_offset: int = 10
    version: int = 2
    now_ms: int = 0
    generation: int = 0
    running: dict[str, Allocation] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)
    leaving: set[str] = field(default_factory=set)
    handed_over: dict[str, HandedOver] = field(default_factory=dict)
    """What the config topic records as handed over, by identity."""
    loads: dict[str, int] = field(default_factory=dict)
    """What each member says its load is (v5); unknown when absent."""
    last: dict[str, Assignment] = field(default_factory=dict)

    def join(self, member: str, identity: str | None = None) -> None:
        self.running[member] = Allocation()
        self.identities[member] = identity or member

    def crash(self, member: str) -> None:
        del self.running[member]

    def round(
        self,
        leader: str | None = None,
        *,
        at_ms: int | None = None,
        reports: Mapping[str, Allocation] | None = None,
        leader_offset: int | None = None,
    ) -> dict[str, Assignment]:
        """Run one round; `reports` overrides what some members say they run."""
        if at_ms is not None:
            self.now_ms = at_ms
        self.generation += 1
        said = {**self.running, **(reports or {})}
        members = {
            m: subscription(
                m,
                said[m],
                config_offset=self.config_offset,
                identity=self.identities[m],
                leaving=m in self.leaving,
                version=self.version,
                load=self.loads.get(m, NO_LOAD),
            )
            for m in said
        }
        leader = leader or sorted(members)[0]
        snapshot = ClusterSnapshot(
            self.config_offset if leader_offset is None else leader_offset,
            self.task_counts,
            self.handed_over,
        )
        self.last = self.assignor.assign(
            GroupRound(
                generation=self.generation,
                leader_id=leader,
                leader_url=members[leader].url,
                version=self.version,
                leader_max_version=self.version,
                members=members,
                snapshot=snapshot,
                now_ms=self.now_ms,
            )
        )
        return self.last

    def apply(self, answers: Mapping[str, Assignment], skip: Iterable[str] = ()) -> None:
        """Members (except `skip`, whose sync failed) act on their answers."""
        for member, answer in answers.items():
            if member in skip or answer.failed or member not in self.running:
                continue
            if self.version == 0:
                self.running[member] = answer.assigned
            else:
                kept = self.running[member].minus(answer.revoked)
                self.running[member] = kept.union(answer.assigned)

    def step(self, leader: str | None = None, *, at_ms: int | None = None) -> dict[str, Assignment]:
        answers = self.round(leader, at_ms=at_ms)
        self.apply(answers)
        return answers

    def settle(self, *, at_ms: int | None = None, limit: int = 10) -> int:
        """Rounds until one revokes nothing; returns how many rounds ran."""
        for rounds in range(1, limit + 1):
            answers = self.step(at_ms=at_ms)
            if all(a.revoked.is_empty() for a in answers.values()):
                return rounds
        raise AssertionError(f"no quiet round within {limit} rounds")

    def owners(self) -> dict[object, list[str]]:
        found: dict[object, list[str]] = {}
        for member in sorted(self.running):
            allocation = self.running[member]
            for item in (*allocation.connectors, *allocation.tasks):
                found.setdefault(item, []).append(member)
        return found

    def configured(self) -> Allocation:
        return ClusterSnapshot(self.config_offset, self.task_counts).configured()


def spread(values: Iterable[int]) -> int:
    listed = list(values)
    return max(listed) - min(listed) if listed else 0


def is_balanced(running: Mapping[str, Allocation]) -> bool:
    """Connectors, tasks and each connector's tasks differ by at most one between members."""
    members = list(running.values())
    if spread(len(a.connectors) for a in members) > 1:
        return False
    if spread(len(a.tasks) for a in members) > 1:
        return False
    connectors = {t.connector for a in members for t in a.tasks}
    return all(
        spread(sum(1 for t in a.tasks if t.connector == c) for a in members) <= 1
        for c in connectors
    )
