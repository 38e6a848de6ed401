"""When a join's answer is not the rebalance this worker needs, so it forces one: pure.

Both cases are KIP-345 static membership (`group.instance.id`) by its letter:

* A process's first join as a static member, unless the assignment names this run
  (`Subscription.incarnation`, v3). Apache Kafka hands a static member that rejoins a
  stable group the generation and the assignment its predecessor had, without a
  rebalance. An incremental cooperative assignment is a change (assigned, revoked) that
  this new process never saw: it would run nothing while the leader believes it runs its
  tasks. After a rebalance, the leader sees what it runs (nothing) under its identity and
  hands its own tasks back at once. An assignment made for this run needs no such round:
  in a rolling bounce it is the one that hands the worker its own tasks back, and
  discarding it cost them a second round (4 s of a 5.9 s gap).
* Tansu answers a changed subscription of a running static member with the current
  generation, so the change (new work, revocations done) would never reach the leader.
  Every later change would need a forced round, and rounds forced in turn kept a group
  from settling, so the worker joins without `group.instance.id` from then on (the
  assignor still knows it by its identity).
"""

from __future__ import annotations

from dataclasses import dataclass

from herder.member.membership import Generation
from protocol import ProtocolError
from protocol.codec import decode_assignment


@dataclass(frozen=True)
class ForcedRound:
    why: str
    join_as_dynamic: bool
    """The broker ignores a static member's changed subscription: stop being one."""


def forced_round(
    generation: Generation,
    *,
    static: bool,
    applied_generation: int,
    joined_with: bytes,
    incarnation: str,
) -> ForcedRound | None:
    """Whether to leave and join again to force a rebalance, and why. `joined_with` is
    the subscription of the last generation taken; `incarnation` names this run."""
    if static and applied_generation < 0 and not answers_run(generation.assignment, incarnation):
        return ForcedRound("first join as a static member", join_as_dynamic=False)
    if generation.generation == applied_generation and generation.subscription != joined_with:
        return ForcedRound("subscription ignored", join_as_dynamic=static)
    return None


def answers_run(assignment: bytes, incarnation: str) -> bool:
    """Whether an assignment was made for the subscription of this run of the process."""
    try:
        return decode_assignment(assignment).incarnation == incarnation
    except ProtocolError:
        return False
