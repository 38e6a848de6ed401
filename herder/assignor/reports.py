"""What the members say they run, regrouped for the leader's arithmetic.

Every collection is filled in sorted member and connector order: frozensets of strings
iterate in a per-process random order, and the assignor must decide the same way every
time it sees the same round (the simulator replays rounds and compares them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from herder.assignor.placement import TaskSets
from protocol.messages import Subscription


@dataclass
class MemberReport:
    tasks: TaskSets
    connectors: frozenset[str]


@dataclass
class GroupReports:
    by_member: dict[str, MemberReport] = field(default_factory=dict)
    running_tasks: TaskSets = field(default_factory=dict)
    """Task numbers by connector that some member runs."""
    running_connectors: set[str] = field(default_factory=set)
    duplicate_tasks: TaskSets = field(default_factory=dict)
    """Tasks more than one member runs: revoked from all of them, re-placed next round."""
    duplicate_connectors: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, members: Mapping[str, Subscription]) -> GroupReports:
        reports = cls()
        for member in sorted(members):
            allocation = members[member].allocation
            grouped: TaskSets = {}
            for connector, number in allocation.tasks:
                numbers = grouped.get(connector)
                if numbers is None:
                    grouped[connector] = {number}
                else:
                    numbers.add(number)
            tasks = {connector: grouped[connector] for connector in sorted(grouped)}
            reports.by_member[member] = MemberReport(tasks, allocation.connectors)
            reports._count(tasks, allocation.connectors)
        return reports

    def _count(self, tasks: TaskSets, connectors: frozenset[str]) -> None:
        for connector, numbers in tasks.items():
            seen = self.running_tasks.get(connector)
            if seen is None:
                self.running_tasks[connector] = set(numbers)
                continue
            twice = seen & numbers
            if twice:
                self.duplicate_tasks.setdefault(connector, set()).update(twice)
            seen |= numbers
        self.duplicate_connectors |= self.running_connectors & connectors
        self.running_connectors |= connectors
