"""Sample values, the field-per-version table the tests hold the codec to, and a v6 layout.

`readable` is an oracle written from the spec (which fields each version adds, and that an
indexed v4 message carries its allocations only in its v4 fields), independent of
`protocol.layout`, so the cross-version tests can fail when the layout drifts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from protocol.codec import Codec
from protocol.connector_table import KNOWN_TABLES, NO_TABLE
from protocol.layout import CURRENT_LAYOUT, Layer, Layout
from protocol.messages import (
    EMPTY_ALLOCATION,
    NO_LOAD,
    Allocation,
    Assignment,
    AssignmentError,
    ConnectorTaskId,
    Subscription,
)
from protocol.wire import Reader, Writer

FUTURE_VERSION = 6

SUBSCRIPTION_FIELDS_SINCE: dict[int, dict[str, Any]] = {
    1: {"allocation": EMPTY_ALLOCATION},
    2: {"instance_id": None, "leaving": False},
    3: {"incarnation": ""},
    4: {"connector_table": NO_TABLE},
    5: {"load": NO_LOAD},
}
ASSIGNMENT_FIELDS_SINCE: dict[int, dict[str, Any]] = {
    1: {"revoked": EMPTY_ALLOCATION, "delay_ms": 0},
    3: {"awaiting_release": EMPTY_ALLOCATION, "incarnation": ""},
    4: {"connector_table": NO_TABLE},
}
INDEXED_ALLOCATIONS = {
    Subscription: ("allocation",),
    Assignment: ("assigned", "revoked", "awaiting_release"),
}
INDEXED_VERSION = 4

Message = TypeVar("Message", Subscription, Assignment)


def readable(value: Message, reader_version: int) -> Message:
    """What a reader of `reader_version` gets from `value` written in its own version."""
    fields_since = (
        SUBSCRIPTION_FIELDS_SINCE if isinstance(value, Subscription) else ASSIGNMENT_FIELDS_SINCE
    )
    layout_version = min(value.version, reader_version)
    indexed = value.version >= INDEXED_VERSION and value.connector_table != NO_TABLE
    if indexed and layout_version < INDEXED_VERSION:
        emptied: dict[str, Any] = dict.fromkeys(INDEXED_ALLOCATIONS[type(value)], EMPTY_ALLOCATION)
        value = replace(value, **emptied)
    for since, defaults in fields_since.items():
        if since > layout_version:
            value = replace(value, **defaults)
    return value


def tasks(connector: str, *numbers: int) -> list[ConnectorTaskId]:
    return [ConnectorTaskId(connector, number) for number in numbers]


RUNNING = Allocation.of(
    ["orders-sink"], [*tasks("orders-sink", 0, 1, 2, 5), *tasks("payments-source", 3)]
)
REVOKED = Allocation.of(["payments-source"], tasks("payments-source", 0))
TABLE = KNOWN_TABLES.add(["audit-sink", "orders-sink", "payments-source"])
"""The samples' connector table: `payments-source` is at index 2, and every connector of
`RUNNING` and `REVOKED` is in it."""


def subscription(version: int, **changes: Any) -> Subscription:
    """A worker's subscription with every field of `version` set to something non-default."""
    base = Subscription(
        version=version,
        max_version=version,
        worker_id="worker-1:8083",
        url="http://worker-1:8083",
        config_offset=42,
    )
    if version >= 1:
        base = replace(base, allocation=RUNNING)
    if version >= 2:
        base = replace(base, instance_id="sparkherd-1", leaving=True)
    if version >= 3:
        base = replace(base, incarnation="5f0c1e2d3a4b6978")
    if version >= 4:
        base = replace(base, connector_table=TABLE)
    if version >= 5:
        base = replace(base, load=730)
    return replace(base, **changes)


def assignment(version: int, **changes: Any) -> Assignment:
    """A leader's assignment with every field of `version` set to something non-default."""
    base = Assignment(
        version=version,
        leader_max_version=version,
        error=AssignmentError.NONE,
        leader_id="worker-0:8083",
        leader_url="http://worker-0:8083",
        config_offset=42,
        assigned=RUNNING,
    )
    if version >= 1:
        base = replace(base, revoked=REVOKED, delay_ms=30_000)
    if version >= 3:
        base = replace(
            base,
            awaiting_release=Allocation.of((), tasks("orders-sink", 1, 5)),
            incarnation="5f0c1e2d3a4b6978",
        )
    if version >= 4:
        base = replace(base, connector_table=TABLE)
    return replace(base, **changes)


def _write_capacity(writer: Writer, sub: Subscription) -> None:
    writer.int32(8, "capacity")


def _read_capacity(reader: Reader, sub: Subscription) -> Subscription:
    if reader.int32("capacity") < 0:
        raise reader.error("capacity must not be negative")
    return sub


def _write_epoch(writer: Writer, assignment: Assignment) -> None:
    writer.int64(7, "epoch")


def _read_epoch(reader: Reader, assignment: Assignment) -> Assignment:
    if reader.int64("epoch") < 0:
        raise reader.error("epoch must not be negative")
    return assignment


FUTURE_LAYOUT: Layout = CURRENT_LAYOUT.extended(
    Layer(_write_capacity, _read_capacity), Layer(_write_epoch, _read_epoch)
)
"""A simulated next release: v6 appends a capacity to subscriptions and an epoch to
assignments, fields this release's values have no place for, as a real v6 would."""


def codec_of_release(known_version: int) -> Codec:
    """The codec of a release whose newest version is `known_version` (6 = simulated)."""
    if known_version == FUTURE_VERSION:
        return Codec(layout=FUTURE_LAYOUT)
    return Codec(known_version)
