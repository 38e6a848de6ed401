"""Which workers have room for more tasks, from the loads the members measure (v5).

Kafka Connect balances counts: a worker whose driver cannot keep its tasks on cadence gets
as many new tasks as an idle one. A member reports its load (`Subscription.load`, per mille
of its driver, `OVERLOADED_LOAD` and up while one of its tasks is behind its trigger), and
the leader closes an overloaded worker to new tasks as long as some other worker has room.
When every worker is overloaded, none is closed: the group has no room anywhere, and count
balance spreads the shortage evenly, as before.

Loads are noisy, so they never move a running task by themselves and never outweigh count
balance between workers with room; among those, a lower load only wins a tie.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protocol.messages import NO_LOAD, OVERLOADED_LOAD, Subscription


def closed_workers(loads: Sequence[int]) -> frozenset[int]:
    """The positions of the workers that take no task this round: the overloaded ones,
    unless that is every worker. An unknown load (`NO_LOAD`, an older member) is room."""
    overloaded = frozenset(i for i, load in enumerate(loads) if load >= OVERLOADED_LOAD)
    return overloaded if len(overloaded) < len(loads) else frozenset()


def closed_members(members: Mapping[str, Subscription]) -> dict[str, Subscription]:
    """The members a round closes: of those that stay (not leaving), the overloaded ones
    unless that is all of them; by member id, in the order the planner ranks them."""
    staying = [member for member in sorted(members) if not members[member].leaving]
    closed = closed_workers([members[member].load for member in staying])
    return {staying[i]: members[staying[i]] for i in sorted(closed)}


def tie_load(load: int) -> int:
    """The load that breaks a tie between workers holding as many tasks. An unknown load
    ties as none: a group speaks v5 only when every member does, so the loads of one
    round are either all measured or all unknown."""
    return 0 if load == NO_LOAD else load
