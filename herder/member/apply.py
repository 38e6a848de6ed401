"""What a worker does with the assignment the leader sent it: a pure decision.

The herder carries the decision out (stops Spark queries, starts them, rejoins), and the
simulator in tests/simulation carries out the very same decision on simulated workers, so
the rules below are checked against thousands of membership histories, not only against
the few a real cluster can run.
"""

from __future__ import annotations

from dataclasses import dataclass

from herder.member import lifecycle_messages as do
from herder.member.membership import Generation
from protocol.messages import EMPTY_ALLOCATION, Allocation, Assignment, AssignmentError
from protocol.negotiation import must_release_for_eager, next_version_after
from protocol.versions import EAGER_VERSION


@dataclass(frozen=True)
class AssignmentStep:
    """The outcome of applying one assignment to what a worker runs.

    `stop` is stopped before `start` is started; `owned` is what the worker runs once
    both are done. `rejoin` means join again at once (after the stops); `catch_up` means
    read the config topic to its end first. `version` is the protocol version of the next
    subscription and `group_version` the version the group now runs (None: unchanged).
    `delay_ms` > 0 is the leader's scheduled rebalance (KIP-415). `await_release` is the
    part of `start` whose previous owner gives it up in the same round: each of it starts
    once that owner has released it.
    """

    stop: Allocation
    start: Allocation
    owned: Allocation
    rejoin: bool
    catch_up: bool
    version: int
    group_version: int | None
    delay_ms: int
    await_release: Allocation = EMPTY_ALLOCATION

    @property
    def accepted(self) -> bool:
        """Whether the assignment gave this worker its work for the generation."""
        return self.group_version is not None


def apply_assignment(
    assignment: Assignment, owned: Allocation, version: int, max_version: int
) -> AssignmentStep:
    """Cooperative (v1+): stop exactly what was revoked, start what was assigned, and
    rejoin at once after a revocation so the leader can hand the work on next round.
    Eager (v0): the new allocation replaces the old one. A refused assignment (config
    mismatch, version probe, malformed metadata) changes no work and asks for a rejoin.
    """
    next_version = next_version_after(assignment, version, max_version)
    new_version = version if next_version is None else next_version
    if assignment.error is AssignmentError.CONFIG_MISMATCH:
        return _refused(owned, version, catch_up=True)
    if assignment.failed:
        return _refused(owned, new_version, catch_up=False)
    assigned = assignment.assigned
    if must_release_for_eager(assignment, owned):
        revoked, assigned = owned, EMPTY_ALLOCATION
    elif assignment.version == EAGER_VERSION:
        revoked = owned.minus(assigned)
    else:
        revoked = assignment.revoked
    stop, start = revoked.intersection(owned), assigned.minus(owned)
    return AssignmentStep(
        stop=stop,
        start=start,
        owned=owned.minus(stop).union(start),
        rejoin=next_version is not None or not revoked.is_empty(),
        catch_up=False,
        version=new_version,
        group_version=assignment.version,
        delay_ms=max(0, assignment.delay_ms),
        await_release=assignment.awaiting_release.intersection(start),
    )


def _refused(owned: Allocation, version: int, catch_up: bool) -> AssignmentStep:
    return AssignmentStep(
        stop=EMPTY_ALLOCATION,
        start=EMPTY_ALLOCATION,
        owned=owned,
        rejoin=True,
        catch_up=catch_up,
        version=version,
        group_version=None,
        delay_ms=0,
    )


def carry_out(
    generation: Generation,
    assignment: Assignment,
    step: AssignmentStep,
    version: int,
    rejoin_at_ms: int | None,
) -> list[do.Command]:
    """The commands that carry `step` out, for a worker that spoke `version`: stops
    before starts; an accepted assignment also arms the scheduled rebalance."""
    commands: list[do.Command] = [do.Announce(generation, assignment)]
    if step.version != version:
        commands.append(do.Note("info", f"protocol version {version} -> {step.version}; rejoining"))
    if step.catch_up:
        why = "config offset behind the leader's; catching up before rejoining"
        commands += [do.Note("info", why), do.ReadConfigToEnd()]
    commands.append(do.StopWork(step.stop))
    if step.accepted:
        commands += [
            do.StartWork(step.start, step.await_release),
            do.MarkUnplaced(),
            do.WakeAt(rejoin_at_ms),
            do.ReadConfigToEnd(),
        ]
    return commands
