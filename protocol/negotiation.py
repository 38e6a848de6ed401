"""Which version the group speaks, decided inside the metadata of one protocol name.

Leader side: `plan_versions` sorts the members' raw metadata into readable subscriptions,
members to probe (they wrote a version the leader's code does not know, KIP-268) and
members whose bytes are garbage, and picks the group version: the highest every readable
member supports, capped by the leader's own. One eager member therefore runs the whole
group at v0, and once it is gone the next rebalance moves the group up again.

Member side: `next_version_after` reads the leader's supported version from every
assignment: after a probe the member downgrades (in memory) and rejoins; when the leader
supports more than the member uses (the leader was upgraded, possibly last) the member
upgrades and rejoins, which is the one extra rebalance that finishes a rolling upgrade.

Eager downgrade (KIP-415): cooperative members keep running their work while they rejoin,
so the first v0 round must not hand anything out, or a task could start on one worker
before another has stopped it. `VersionPlan.requires_empty_eager_round` tells the leader to
send `empty_assignment()` to everyone; `must_release_for_eager` tells a member that receives
a v0 assignment while still running work to stop everything and rejoin. The round after
that finds every allocation empty (eager members stop all work before they join) and is a
regular eager round: a one-time double rebalance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from protocol.codec import CURRENT_CODEC, Codec
from protocol.connector_table import UnknownConnectorTable
from protocol.errors import DecodeError
from protocol.messages import Allocation, Assignment, AssignmentError, Subscription
from protocol.versions import EAGER_VERSION


@dataclass(frozen=True)
class LeaderInfo:
    """What every assignment says about the leader that wrote it."""

    leader_id: str
    leader_url: str
    config_offset: int


@dataclass(frozen=True)
class VersionPlan:
    """The leader's reading of one round's metadata.

    `subscriptions` are the members to assign work to. `probed` members wrote a newer version
    than the leader knows; their value is the prefix the leader could read, so the assignor
    can treat their allocation as still owned (they keep running it while they rejoin at a
    version the leader speaks) instead of handing it to others. `malformed` maps each member
    whose bytes could not be decoded to the reason, for the leader's log. `stale` maps each
    member whose allocation indexes a connector table the leader does not hold (their config
    snapshots name different connectors) to the reason: what it runs is unknown, so the
    round assigns nothing and everyone reads the config to its end and rejoins
    (`requires_config_catch_up`).
    """

    group_version: int
    leader_max_version: int
    subscriptions: Mapping[str, Subscription]
    probed: Mapping[str, Subscription]
    malformed: Mapping[str, str]
    stale: Mapping[str, str]

    @property
    def requires_config_catch_up(self) -> bool:
        return bool(self.stale)

    @property
    def requires_empty_eager_round(self) -> bool:
        """Whether this v0 round must assign nothing, because a member still runs work it
        kept under the cooperative protocol (see the module docstring)."""
        return self.group_version == EAGER_VERSION and any(
            sub.version > EAGER_VERSION and not sub.allocation.is_empty()
            for sub in self.subscriptions.values()
        )

    def empty_assignment(
        self, leader: LeaderInfo, error: AssignmentError = AssignmentError.NONE
    ) -> Assignment:
        """An assignment with no work, at the group version (at the leader's version for a
        probe, which KIP-268 uses to tell the member what the leader speaks)."""
        probing = error is AssignmentError.VERSION_PROBE
        version = self.leader_max_version if probing else self.group_version
        return Assignment(
            version=version,
            leader_max_version=self.leader_max_version,
            error=error,
            leader_id=leader.leader_id,
            leader_url=leader.leader_url,
            config_offset=leader.config_offset,
        )

    def rejections(self, leader: LeaderInfo) -> dict[str, Assignment]:
        """The assignments of probed and malformed members, who get no work this round."""
        probe = self.empty_assignment(leader, AssignmentError.VERSION_PROBE)
        malformed = self.empty_assignment(leader, AssignmentError.MALFORMED_SUBSCRIPTION)
        return {member: probe for member in self.probed} | {
            member: malformed for member in self.malformed
        }

    def catch_up(self, leader: LeaderInfo) -> dict[str, Assignment]:
        """Every member's answer in a round with stale members: no work, read the config
        to its end and rejoin, which brings the stale members to the leader's table."""
        mismatch = self.empty_assignment(leader, AssignmentError.CONFIG_MISMATCH)
        return dict.fromkeys([*self.subscriptions, *self.stale], mismatch)


def plan_versions(
    members: Mapping[str, bytes], leader_max_version: int, codec: Codec = CURRENT_CODEC
) -> VersionPlan:
    """Decode every member's metadata and choose the version of this round.

    `leader_max_version` is what the leader offers (`max_version_for` its mode); `codec` is
    the leader's, whose `known_version` decides which members must be probed. Members whose
    bytes fail to decode never stop the round: they end up in `malformed`.
    """
    if not 0 <= leader_max_version <= codec.known_version:
        raise ValueError(
            f"leader_max_version must be within 0..{codec.known_version}, got {leader_max_version}"
        )
    subscriptions: dict[str, Subscription] = {}
    probed: dict[str, Subscription] = {}
    malformed: dict[str, str] = {}
    stale: dict[str, str] = {}
    for member, metadata in members.items():
        try:
            sub = codec.decode_subscription(metadata)
        except UnknownConnectorTable as exc:
            stale[member] = str(exc)
            continue
        except DecodeError as exc:
            malformed[member] = str(exc)
            continue
        if sub.version > codec.known_version:
            probed[member] = sub
        else:
            subscriptions[member] = sub
    group_version = min(
        (sub.max_version for sub in subscriptions.values()), default=leader_max_version
    )
    return VersionPlan(
        group_version=min(group_version, leader_max_version),
        leader_max_version=leader_max_version,
        subscriptions=subscriptions,
        probed=probed,
        malformed=malformed,
        stale=stale,
    )


def next_version_after(assignment: Assignment, used: int, own_max: int) -> int | None:
    """The version a member should write its next subscription in, or None to keep `used`.

    A changed version means the member rejoins at once: downward after a probe, upward when
    the leader supports more than the member uses (never beyond `own_max`, so an eager
    worker, whose `own_max` is 0, stays at v0).
    """
    target = min(assignment.leader_max_version, own_max)
    if assignment.error is AssignmentError.VERSION_PROBE:
        return target if target < used else None
    return target if target > used else None


def must_release_for_eager(assignment: Assignment, running: Allocation) -> bool:
    """Whether a member must stop all it runs and rejoin: an eager (v0) assignment found it
    still running work, which only happens when the group has just been downgraded."""
    return assignment.version == EAGER_VERSION and not assignment.failed and not running.is_empty()
