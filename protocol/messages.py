"""Typed values exchanged inside the group protocol's metadata.

They are immutable so the leader can keep a round's inputs as its memory of that round
without defensive copies, and hashable so allocations can be compared as sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Final, NamedTuple


class ConnectorTaskId(NamedTuple):
    """One task of one connector; rendered `<connector>-<task>` as Kafka Connect does.

    A named tuple, not a dataclass, because the leader hashes and compares 10^5 of them per
    round: a tuple does both in C, a dataclass in Python (a third of a 100k-task round).
    """

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass(frozen=True)
class Allocation:
    """A set of connectors and tasks: what a worker runs, is given or must give up."""

    connectors: frozenset[str] = field(default_factory=frozenset)
    tasks: frozenset[ConnectorTaskId] = field(default_factory=frozenset)

    @classmethod
    def of(
        cls, connectors: Iterable[str] = (), tasks: Iterable[ConnectorTaskId] = ()
    ) -> Allocation:
        return cls(frozenset(connectors), frozenset(tasks))

    def is_empty(self) -> bool:
        return not self.connectors and not self.tasks

    def size(self) -> int:
        return len(self.connectors) + len(self.tasks)

    def union(self, other: Allocation) -> Allocation:
        return Allocation(self.connectors | other.connectors, self.tasks | other.tasks)

    def minus(self, other: Allocation) -> Allocation:
        return Allocation(self.connectors - other.connectors, self.tasks - other.tasks)

    def intersection(self, other: Allocation) -> Allocation:
        return Allocation(self.connectors & other.connectors, self.tasks & other.tasks)


EMPTY_ALLOCATION = Allocation()


class AssignmentError(IntEnum):
    """Why an assignment carries no work, so the member knows how to recover."""

    NONE = 0
    CONFIG_MISMATCH = 1
    """The leader's config offset lags a member's: the leader catches up, everyone rejoins."""
    VERSION_PROBE = 2
    """The member spoke a version the leader does not know: downgrade and rejoin (KIP-268)."""
    MALFORMED_SUBSCRIPTION = 3
    """The member's metadata could not be decoded: it gets no work until it sends valid bytes."""


NO_LOAD: Final = -1
"""A subscription's `load` when the member measured none: an older member, or a worker
that runs no task with a trigger interval."""
OVERLOADED_LOAD: Final = 1000
"""The `load` from which a member is overloaded: a task of its own is behind its trigger."""


@dataclass(frozen=True)
class Subscription:
    """A worker's state as it joins: what it speaks, who it is, what it runs.

    `version` is the version this payload is written in; `max_version` the highest the
    worker could speak. `worker_id` is the Connect-style id shown in statuses (advertised
    host:port); `instance_id` is `group.instance.id` when set. `allocation` is what the
    worker runs now (v1+); `instance_id` and `leaving` exist from v2 on, `incarnation`
    from v3 on, `load` from v5 on.
    """

    version: int
    max_version: int
    worker_id: str
    url: str
    config_offset: int
    allocation: Allocation = EMPTY_ALLOCATION
    instance_id: str | None = None
    leaving: bool = False
    incarnation: str = ""
    """A token of this run of the worker process (v3+), which the leader echoes in the
    member's assignment: a static member's first join can then tell an assignment made
    for this run from one the coordinator replays from its predecessor (KIP-345)."""
    connector_table: int = 0
    """The fingerprint of the worker's `ConnectorTable` (v4+): its allocation names
    connectors by their indexes in it, and the leader answers in it when it holds the
    same. 0: every connector is named in full."""
    load: int = NO_LOAD
    """The worker's measured load in per mille of its driver (v5+): its tasks' demand
    on the driver, `OVERLOADED_LOAD` or more while one of them is behind its trigger
    (`worker.driver_load`). `NO_LOAD`: not measured."""

    @property
    def identity(self) -> str:
        """The stable identity of the worker across restarts: instance id, else its URL."""
        return self.instance_id if self.instance_id else self.url


@dataclass(frozen=True)
class Assignment:
    """The leader's answer to one member for one generation.

    `leader_max_version` lets a member that was probed (or downgraded) learn what the
    leader can speak; `delay_ms` > 0 asks the member to rejoin after that long so the
    leader can resolve deferred imbalance (KIP-415 scheduled rebalance).
    """

    version: int
    leader_max_version: int
    error: AssignmentError
    leader_id: str
    leader_url: str
    config_offset: int
    assigned: Allocation = EMPTY_ALLOCATION
    revoked: Allocation = EMPTY_ALLOCATION
    delay_ms: int = 0
    awaiting_release: Allocation = EMPTY_ALLOCATION
    """The part of `assigned` that another member gives up in this same round (v3+):
    start each of it only once its previous owner has released it (see
    `worker.plugins.task_claims`), so the hand-over costs no second round."""
    incarnation: str = ""
    """The `incarnation` of the subscription this assignment answers (v3+)."""
    connector_table: int = 0
    """The fingerprint of the `ConnectorTable` whose indexes name the connectors of the
    allocations (v4+), which is the member's own; 0: they are named in full."""

    @property
    def failed(self) -> bool:
        return self.error is not AssignmentError.NONE
