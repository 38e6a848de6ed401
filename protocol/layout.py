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

    Assignment   v0 => Version:int16 LeaderMaxVersion:int16 Error:int16 LeaderId:string
                       LeaderUrl:string ConfigOffset:int64 Assigned:Allocation
                 v1 => v0 Revoked:Allocation DelayMs:int32  (KIP-415)
                 v2 => v1                                   (no new fields)
                 v3 => v2 AwaitingRelease:Allocation Incarnation:string
                                           (same-round hand-over, the run it answers)

`Allocation` is described in `protocol.allocation_format`. A value written in a version that
lacks some of its fields is written without them (an eager v0 assignment has nothing
revoked by definition). Tests and future versions extend a `Layout` with `extended`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from protocol.allocation_format import read_allocation, write_allocation
from protocol.errors import EncodeError
from protocol.messages import Assignment, AssignmentError, Subscription
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


def _write_subscription_v1(writer: Writer, sub: Subscription) -> None:
    write_allocation(writer, sub.allocation, "allocation")


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


def _write_assignment_v0(writer: Writer, assignment: Assignment) -> None:
    writer.int16(assignment.error, "error")
    writer.string(assignment.leader_id, "leader_id")
    writer.string(assignment.leader_url, "leader_url")
    writer.int64(assignment.config_offset, "config_offset")
    write_allocation(writer, assignment.assigned, "assigned")


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
    write_allocation(writer, assignment.revoked, "revoked")
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
    write_allocation(writer, assignment.awaiting_release, "awaiting_release")
    writer.string(assignment.incarnation, "incarnation")


def _read_assignment_v3(reader: Reader, assignment: Assignment) -> Assignment:
    awaiting = read_allocation(reader, "awaiting_release")
    if not awaiting.tasks <= assignment.assigned.tasks or awaiting.connectors:
        raise reader.error("awaiting_release must be tasks of the assignment")
    incarnation = reader.string("incarnation")
    return replace(assignment, awaiting_release=awaiting, incarnation=incarnation)


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
        ),
    ),
)
