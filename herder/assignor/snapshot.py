"""The inputs of one assignment round, as the leader's herder hands them to an assignor.

A round is a value: the assignor gets everything it may look at (members, configuration,
clock) in one object, so the same object can be replayed in tests and in the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from protocol.messages import Allocation, ConnectorTaskId, Subscription


@dataclass(frozen=True)
class HandedOver:
    """Tasks a member leaving for good handed over: they go back to a member with its
    identity that joins before `until_ms` (a rolling bounce: the pod comes back)."""

    until_ms: int
    tasks: Mapping[str, frozenset[int]]


@dataclass(frozen=True)
class ClusterSnapshot:
    """The configuration the leader has read: which connectors exist and how many tasks each.

    A connector with 0 tasks (e.g. STOPPED) is still configured and still gets assigned as a
    connector, which is why the task count and not a task list is the source of truth.
    """

    config_offset: int
    task_counts: Mapping[str, int]
    handed_over: Mapping[str, HandedOver] = field(default_factory=dict)
    """Hand-overs recorded in the config topic by earlier leaders, by identity: a new
    leader learns of them there (its predecessor's memory left with it)."""

    def all_connectors(self) -> frozenset[str]:
        return self._connectors

    def all_tasks(self) -> frozenset[ConnectorTaskId]:
        return self._tasks

    def configured(self) -> Allocation:
        return Allocation(self._connectors, self._tasks)

    @cached_property
    def _connectors(self) -> frozenset[str]:
        return frozenset(self.task_counts)

    @cached_property
    def _tasks(self) -> frozenset[ConnectorTaskId]:
        return frozenset(
            ConnectorTaskId(connector, task)
            for connector, count in self.task_counts.items()
            for task in range(count)
        )


@dataclass(frozen=True)
class GroupRound:
    """One completed join phase as seen by its leader.

    `members` holds only members whose metadata decoded; `version` is the negotiated group
    protocol version (0 eager, 1 cooperative, 2 cooperative with identities and leaving).
    """

    generation: int
    leader_id: str
    leader_url: str
    version: int
    leader_max_version: int
    members: Mapping[str, Subscription]
    snapshot: ClusterSnapshot
    now_ms: int
