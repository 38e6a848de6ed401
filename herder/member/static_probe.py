"""Whether the broker honours KIP-345 for a static member whose subscription changes.

Asked once, before the first join, in a throwaway group of its own (the worker's group
sees nothing of it): join as a static member, join again with another subscription, and
see whether that made a new generation, as KIP-345 has it. Tansu answers with the
current generation instead, so a changed subscription (new work, revocations done) never
reaches the leader, and the rounds forced to get past that kept a rolling bounce from
ever settling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from herder.member.membership import JoinedMembers, Membership, Subscribe

STATIC_PROBE_GROUP_INFIX: Final = ".static-probe."
"""`<group.id>.static-probe.<random>`: the throwaway group of the probe."""
PROBE_SESSION_TIMEOUT_MS: Final = 6000
"""Apache Kafka's least (`group.min.session.timeout.ms`); Tansu's join phase lasts half
the session timeout of a group's first member, so the probe's two rounds stay short."""


async def changed_subscription_rebalances(probe: Membership) -> bool:
    """`probe`: a static member of a group of its own, not started yet."""
    await probe.start()
    try:
        first = await probe.join(subscribing(b"before"), _assign_a_token, lambda: None)
        second = await probe.join(subscribing(b"after"), _assign_a_token, lambda: None)
        await probe.leave()
    finally:
        await probe.close()
    return second.generation != first.generation


def subscribing(metadata: bytes) -> Subscribe:
    """A subscription that never changes: a member whose metadata is fixed."""

    async def subscribe() -> bytes:
        return metadata

    return subscribe


async def _assign_a_token(members: JoinedMembers) -> Mapping[str, bytes]:
    """Not empty: Tansu answers a SyncGroup whose assignment is empty with error 27."""
    return dict.fromkeys(members.metadata, b"probe")
