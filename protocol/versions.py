"""Protocol versions and the `connect.protocol` setting that picks the ones a worker speaks.

Versions only ever append fields (see `protocol.layout`), so any reader can read any
payload up to the fields it knows. v0 is eager: full assignments, nothing revoked, no
allocation in subscriptions. v1 adds KIP-415's incremental cooperative fields (current
allocation, revoked, scheduled delay). v2 adds the static instance id and the leaving flag.
v3 adds the tasks an assignment hands over in the round that revokes them. v4 names
connectors by their index in a config snapshot both sides hold (`protocol.connector_table`).
v5 adds the member's measured load to its subscription, which the leader places new tasks
by (`herder.assignor.placement`).
"""

from __future__ import annotations

from enum import StrEnum

PROTOCOL_TYPE = "connect"
"""The group's protocol type; Kafka Connect's, so broker tooling shows the group as one."""

PROTOCOL_NAME = "sparkherd"
"""The only protocol name the group offers: brokers refuse members offering different
lists, so versions are negotiated inside the metadata instead (KIP-268)."""

EAGER_VERSION = 0
FIRST_COOPERATIVE_VERSION = 1
CURRENT_VERSION = 5
LEAVING_FLAG_VERSION = 2
"""The first version whose subscription can say that a member is leaving (a hand-off)."""
SAME_ROUND_HAND_OVER_VERSION = 3
"""The first version whose members wait for a task's release before they start it, so a
leader may assign a task in the round that revokes it (`Assignment.awaiting_release`)."""
INDEXED_CONNECTORS_VERSION = 4
"""The first version whose allocations may name connectors by their index in a shared
`ConnectorTable`, which keeps a 100-worker group's metadata under 1 MB whatever the names."""
MEMBER_LOAD_VERSION = 5
"""The first version whose subscriptions carry the member's measured load
(`Subscription.load`); an older member's load is unknown to the leader."""


class ConnectProtocol(StrEnum):
    """Values of `connect.protocol`."""

    EAGER = "eager"
    """Version 0 only: every rebalance revokes everything."""
    COMPATIBLE = "compatible"
    """The highest version this worker knows; the group settles on what all members speak."""
    SESSIONED = "sessioned"
    """Kafka Connect's name for its newest mode, accepted so its worker files keep working."""


DEFAULT_CONNECT_PROTOCOL = ConnectProtocol.COMPATIBLE


def parse_connect_protocol(text: str) -> ConnectProtocol:
    """Read a `connect.protocol` value, case-insensitively as Kafka Connect does."""
    try:
        return ConnectProtocol(text.strip().lower())
    except ValueError:
        allowed = ", ".join(mode.value for mode in ConnectProtocol)
        raise ValueError(f"connect.protocol must be one of {allowed}; got {text!r}") from None


def max_version_for(mode: ConnectProtocol, known_version: int = CURRENT_VERSION) -> int:
    """The highest version a worker in `mode` offers; `known_version` is its code's newest."""
    if mode is ConnectProtocol.EAGER:
        return EAGER_VERSION
    return known_version


def is_cooperative(version: int) -> bool:
    """Whether assignments of `version` are incremental (a member keeps what is not revoked)."""
    return version >= FIRST_COOPERATIVE_VERSION
