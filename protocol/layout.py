"""The field layout of every protocol version, as layers appended one per version.

Each version's layout is the previous version's plus the fields its `Layer` appends, so a
reader that knows versions 0..k reads the first k+1 layers of any payload and skips the
rest. Both messages start with the version the payload is written in and the writer's
highest supported version, so even a reader older than every layer learns both.

    Subscription v0 => Version:int16 MaxVersion:int16 WorkerId:string Url:string
                       ConfigOffset:int64
                 v1 => v0 Allocation                       (current allocation, KIP-415)
                 v2 => v1 InstanceId:nullable string Leaving:int8 (0 or 1)
                 v3 => v2 Incarnation:string                (this run of the process)
                 v4 => v3 ConnectorTable:int64 [IndexedAllocation]
                 v5 => v4 Load:int16                        (per mille; -1 unknown)

    Assignment   v0 => Version:int16 LeaderMaxVersion:int16 Error:int16 LeaderId:string
                       LeaderUrl:string ConfigOffset:int64 Assigned:Allocation
                 v1 => v0 Revoked:Allocation DelayMs:int32  (KIP-415)
                 v2 => v1                                   (no new fields)
                 v3 => v2 AwaitingRelease:Allocation Incarnation:string
                                           (same-round hand-over, the run it answers)
                 v4 => v3 ConnectorTable:int64 [Assigned Revoked AwaitingRelease]
                                           (each an IndexedAllocation)
                 v5 => v4                                   (no new fields)

From v4 on a message whose ConnectorTable is not 0 carries its allocations only in the
bracketed v4 fields, indexed by that table (`protocol.connector_table`), and writes the
earlier versions' allocation fields empty; with 0 it has no bracketed fields. A v3 reader
thus reads such a v4 subscription as one that owns nothing, which is why a worker indexes
its subscription only once the whole group speaks v4 (herder/member/joining.py).

`Allocation` is described in `protocol.allocation_format`. A value written in a version that
lacks some of its fields is written without them (an eager v0 assignment has nothing
revoked by definition). Tests and future versions extend a `Layout` with `extended`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from protocol.allocation_format import (
    read_allocation,
    read_indexed_allocation,
    write_allocation,
    write_indexed_allocation,
)
from protocol.connector_table import KNOWN_TABLES, NO_TABLE, ConnectorTable
from protocol.errors import EncodeError
from protocol.messages import (
    EMPTY_ALLOCATION,
    NO_LOAD,
    Allocation,
    Assignment,
    AssignmentError,
    Subscription,
)
from protocol.versions import INDEXED_CONNECTORS_VERSION
from protocol.wire import Reader, Writer

T = TypeVar("T")


@dataclass(frozen=True)
class Layer(Generic[T]):
    """The fields one version appends: `read` returns the value with those fields filled in."""

    write: Callable[[Writer, T], None]
    read: Callable[[Reader, T], T]


@dataclass(frozen=True)
class MessageFormat(Generic[T]):
    """One message kind: its header accessors and its layers, index = version."""

    kind: str
    header: Callable[[T], tuple[int, int]]
    """The (version used, highest version supported) a value is written with."""
    seed: Callable[[int, int], T]
    """A value holding only the header, which the layers then fill in."""
    layers: tuple[Layer[T], ...]

    @property
    def newest_version(self) -> int:
        return len(self.layers) - 1

    def extended(self, layer: Layer[T]) -> MessageFormat[T]:
        return replace(self, layers=(*self.layers, layer))


@dataclass(frozen=True)
class Layout:
    """Both message formats, always at the same newest version."""

    subscription: MessageFormat[Subscription]
    assignment: MessageFormat[Assignment]

    def __post_init__(self) -> None:
        if self.subscription.newest_version != self.assignment.newest_version:
            raise ValueError("subscription and assignment layouts must end at the same version")

    @property
    def newest_version(self) -> int:
        return self.subscription.newest_version

    def extended(self, subscription: Layer[Subscription], assignment: Layer[Assignment]) -> Layout:
        """This layout plus one version, as a future release (or a test playing one) adds."""
        return Layout(
            self.subscription.extended(subscription), self.assignment.extended(assignment)
        )


def _write_nothing(writer: Writer, value: object) -> None:
    """A version that appends no field to a message still needs a layer to keep the index."""


def _read_nothing(reader: Reader, value: T) -> T:
    return value


NO_NEW_FIELDS_ASSIGNMENT: Layer[Assignment] = Layer(_write_nothing, _read_nothing)


def _write_subscription_v0(writer: Writer, sub: Subscription) -> None:
    writer.string(sub.worker_id, "worker_id")
    writer.string(sub.url, "url")
    writer.int64(sub.config_offset, "config_offset")


def _read_subscription_v0(reader: Reader, sub: Subscription) -> Subscription:
    return replace(
        sub,
        worker_id=reader.string("worker_id"),
        url=reader.string("url"),
        config_offset=reader.int64("config_offset"),
    )


def _indexed(version: int, fingerprint: int) -> bool:
    """Whether a message carries its allocations in its v4 fields, by table indexes."""
    return version >= INDEXED_CONNECTORS_VERSION and fingerprint != NO_TABLE


def _in_prefix(version: int, fingerprint: int, allocation: Allocation) -> Allocation:
    return EMPTY_ALLOCATION if _indexed(version, fingerprint) else allocation


def _write_subscription_v1(writer: Writer, sub: Subscription) -> None:
    allocation = _in_prefix(sub.version, sub.connector_table, sub.allocation)
    write_allocation(writer, allocation, "allocation")


def _read_subscription_v1(reader: Reader, sub: Subscription) -> Subscription:
    return replace(sub, allocation=read_allocation(reader, "allocation"))


def _write_subscription_v2(writer: Writer, sub: Subscription) -> None:
    writer.nullable_string(sub.instance_id, "instance_id")
    writer.int8(int(sub.leaving), "leaving")


def _read_subscription_v2(reader: Reader, sub: Subscription) -> Subscription:
    instance_id = reader.nullable_string("instance_id")
    leaving = reader.int8("leaving")
    if leaving not in (0, 1):
        raise reader.error(f"leaving must be 0 or 1, got {leaving}")
    return replace(sub, instance_id=instance_id, leaving=bool(leaving))


def _write_subscription_v3(writer: Writer, sub: Subscription) -> None:
    writer.string(sub.incarnation, "incarnation")


def _read_subscription_v3(reader: Reader, sub: Subscription) -> Subscription:
    return replace(sub, incarnation=reader.string("incarnation"))


def _write_subscription_v4(writer: Writer, sub: Subscription) -> None:
    writer.int64(sub.connector_table, "connector_table")
    if _indexed(sub.version, sub.connector_table):
        table = _known_table(sub.connector_table)
        write_indexed_allocation(writer, sub.allocation, "allocation", table)


def _read_subscription_v4(reader: Reader, sub: Subscription) -> Subscription:
    fingerprint = reader.int64("connector_table")
    if fingerprint == NO_TABLE:
        return sub
    if not sub.allocation.is_empty():
        raise reader.error("an indexed subscription has an allocation in its v1 field")
    allocation = _read_indexed(reader, "allocation", fingerprint)
    return replace(sub, connector_table=fingerprint, allocation=allocation)


def _write_subscription_v5(writer: Writer, sub: Subscription) -> None:
    if sub.load < NO_LOAD:
        raise EncodeError(f"load must be {NO_LOAD} (unknown) or more, got {sub.load}")
    writer.int16(sub.load, "load")


def _read_subscription_v5(reader: Reader, sub: Subscription) -> Subscription:
    load = reader.int16("load")
    if load < NO_LOAD:
        raise reader.error(f"load must be {NO_LOAD} (unknown) or more, got {load}")
    return replace(sub, load=load)


def _known_table(fingerprint: int) -> ConnectorTable:
    table = KNOWN_TABLES.get(fingerprint)
    if table is None:
        raise EncodeError(f"connector table {fingerprint} was not built by this process")
    return table


def _read_indexed(reader: Reader, field: str, fingerprint: int) -> Allocation:
    table = KNOWN_TABLES.get(fingerprint)
    return read_indexed_allocation(reader, field, table, fingerprint)


def _write_assignment_v0(writer: Writer, assignment: Assignment) -> None:
    writer.int16(assignment.error, "error")
    writer.string(assignment.leader_id, "leader_id")
    writer.string(assignment.leader_url, "leader_url")
    writer.int64(assignment.config_offset, "config_offset")
    write_allocation(writer, _assignment_prefix(assignment, assignment.assigned), "assigned")


def _assignment_prefix(assignment: Assignment, allocation: Allocation) -> Allocation:
    return _in_prefix(assignment.version, assignment.connector_table, allocation)


def _read_assignment_v0(reader: Reader, assignment: Assignment) -> Assignment:
    code = reader.int16("error")
    if code not in AssignmentError._value2member_map_:
        raise reader.error(f"unknown error code {code}")
    return replace(
        assignment,
        error=AssignmentError(code),
        leader_id=reader.string("leader_id"),
        leader_url=reader.string("leader_url"),
        config_offset=reader.int64("config_offset"),
        assigned=read_allocation(reader, "assigned"),
    )


def _write_assignment_v1(writer: Writer, assignment: Assignment) -> None:
    write_allocation(writer, _assignment_prefix(assignment, assignment.revoked), "revoked")
    if assignment.delay_ms < 0:
        raise EncodeError(f"delay_ms must not be negative, got {assignment.delay_ms}")
    writer.int32(assignment.delay_ms, "delay_ms")


def _read_assignment_v1(reader: Reader, assignment: Assignment) -> Assignment:
    revoked = read_allocation(reader, "revoked")
    delay_ms = reader.int32("delay_ms")
    if delay_ms < 0:
        raise reader.error(f"delay_ms must not be negative, got {delay_ms}")
    return replace(assignment, revoked=revoked, delay_ms=delay_ms)


def _write_assignment_v3(writer: Writer, assignment: Assignment) -> None:
    awaiting = _assignment_prefix(assignment, assignment.awaiting_release)
    write_allocation(writer, awaiting, "awaiting_release")
    writer.string(assignment.incarnation, "incarnation")


def _read_assignment_v3(reader: Reader, assignment: Assignment) -> Assignment:
    awaiting = _awaited(reader, assignment, read_allocation(reader, "awaiting_release"))
    incarnation = reader.string("incarnation")
    return replace(assignment, awaiting_release=awaiting, incarnation=incarnation)


def _awaited(reader: Reader, assignment: Assignment, awaiting: Allocation) -> Allocation:
    if not awaiting.tasks <= assignment.assigned.tasks or awaiting.connectors:
        raise reader.error("awaiting_release must be tasks of the assignment")
    return awaiting


_ASSIGNMENT_ALLOCATIONS = ("assigned", "revoked", "awaiting_release")


def _write_assignment_v4(writer: Writer, assignment: Assignment) -> None:
    writer.int64(assignment.connector_table, "connector_table")
    if _indexed(assignment.version, assignment.connector_table):
        table = _known_table(assignment.connector_table)
        for field in _ASSIGNMENT_ALLOCATIONS:
            write_indexed_allocation(writer, getattr(assignment, field), field, table)


def _read_assignment_v4(reader: Reader, assignment: Assignment) -> Assignment:
    fingerprint = reader.int64("connector_table")
    if fingerprint == NO_TABLE:
        return assignment
    if any(getattr(assignment, field).size() for field in _ASSIGNMENT_ALLOCATIONS):
        raise reader.error("an indexed assignment has allocations in its earlier fields")
    assigned = _read_indexed(reader, "assigned", fingerprint)
    revoked = _read_indexed(reader, "revoked", fingerprint)
    indexed = replace(assignment, connector_table=fingerprint, assigned=assigned, revoked=revoked)
    awaiting = _read_indexed(reader, "awaiting_release", fingerprint)
    return replace(indexed, awaiting_release=_awaited(reader, indexed, awaiting))


def _subscription_header(sub: Subscription) -> tuple[int, int]:
    return sub.version, sub.max_version


def _subscription_seed(version: int, max_version: int) -> Subscription:
    return Subscription(version, max_version, worker_id="", url="", config_offset=0)


def _assignment_header(assignment: Assignment) -> tuple[int, int]:
    return assignment.version, assignment.leader_max_version


def _assignment_seed(version: int, leader_max_version: int) -> Assignment:
    return Assignment(version, leader_max_version, AssignmentError.NONE, "", "", config_offset=0)


CURRENT_LAYOUT = Layout(
    subscription=MessageFormat(
        kind="subscription",
        header=_subscription_header,
        seed=_subscription_seed,
        layers=(
            Layer(_write_subscription_v0, _read_subscription_v0),
            Layer(_write_subscription_v1, _read_subscription_v1),
            Layer(_write_subscription_v2, _read_subscription_v2),
            Layer(_write_subscription_v3, _read_subscription_v3),
            Layer(_write_subscription_v4, _read_subscription_v4),
            Layer(_write_subscription_v5, _read_subscription_v5),
        ),
    ),
    assignment=MessageFormat(
        kind="assignment",
        header=_assignment_header,
        seed=_assignment_seed,
        layers=(
            Layer(_write_assignment_v0, _read_assignment_v0),
            Layer(_write_assignment_v1, _read_assignment_v1),
            NO_NEW_FIELDS_ASSIGNMENT,
            Layer(_write_assignment_v3, _read_assignment_v3),
            Layer(_write_assignment_v4, _read_assignment_v4),
            NO_NEW_FIELDS_ASSIGNMENT,
        ),
    ),
)
