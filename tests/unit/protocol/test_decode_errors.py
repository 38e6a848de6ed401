"""Hostile and broken metadata: every refusal is a DecodeError that says what is wrong."""

from __future__ import annotations

import zlib
from collections.abc import Callable

import pytest

from protocol.allocation_format import MAX_CONTENT_BYTES, MAX_NAME_CHARACTERS, MAX_TASKS
from protocol.codec import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import DecodeError, ProtocolError
from protocol.messages import Allocation, ConnectorTaskId
from protocol.wire import INT16_MAX, INT32_MAX, Writer
from tests.unit.protocol.samples import assignment, subscription


def v1_subscription(allocation_body: bytes | None) -> bytes:
    """A v1 subscription whose allocation field holds `allocation_body` verbatim."""
    writer = Writer()
    writer.int16(1, "version")
    writer.int16(1, "max_version")
    writer.string("w", "worker_id")
    writer.string("http://w", "url")
    writer.int64(0, "config_offset")
    writer.nullable_bytes(allocation_body, "allocation")
    return writer.getvalue()


def content(
    names: list[tuple[int, str]],
    connectors: list[int] = (),  # type: ignore[assignment]
    range_counts: list[int] | None = None,
    starts: list[int] = (),  # type: ignore[assignment]
    lengths: list[int] = (),  # type: ignore[assignment]
) -> bytes:
    """A plain allocation body (format byte included) built field by field."""
    writer = Writer()
    writer.int8(0, "format")
    writer.array_count(len(names), "names")
    for prefix, suffix in names:
        writer.int16(prefix, "prefix")
        writer.string(suffix, "suffix")
    writer.int32_array(list(connectors), "connectors")
    writer.int32_array([0] * len(names) if range_counts is None else range_counts, "counts")
    writer.int32_array(list(starts), "starts")
    writer.int32_array(list(lengths), "lengths")
    return writer.getvalue()


def test_decode_error_is_the_documented_protocol_error() -> None:
    assert issubclass(DecodeError, ProtocolError)
    assert issubclass(ProtocolError, ValueError)


@pytest.mark.parametrize(
    ("encode", "decode", "value"),
    [
        (encode_subscription, decode_subscription, subscription(2)),
        (encode_assignment, decode_assignment, assignment(2)),
    ],
    ids=["subscription", "assignment"],
)
def test_every_truncation_is_refused(
    encode: Callable[[object], bytes], decode: Callable[[bytes], object], value: object
) -> None:
    data = encode(value)
    for size in range(len(data)):
        with pytest.raises(DecodeError, match="truncated"):
            decode(data[:size])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", r"subscription: truncated: version needs 2 bytes, 0 left \(at byte 0\)"),
        (b"\xff\xfe\x00\x00", "negative version -2"),
        (b"\x00\x02\x00\x01", "supported version 1 is below the version used 2"),
        (b"\x00\x00\x00\x00\xff\xfe", "worker_id has a negative length -2"),
        (b"\x00\x00\x00\x00\xff\xff", "worker_id is null but is required"),
        (b"\x00\x00\x00\x00\x00\x02\xc3\x28", "worker_id is not valid UTF-8"),
        (b"\x00\x00\x00\x00\x7f\xff", "worker_id needs 32767 bytes, 0 left"),
    ],
)
def test_header_and_string_errors_name_the_field(data: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_subscription(data)


def test_a_leaving_flag_other_than_0_or_1_is_refused() -> None:
    data = encode_subscription(subscription(2, leaving=False))
    with pytest.raises(DecodeError, match="leaving must be 0 or 1, got 2"):
        decode_subscription(data[:-1] + b"\x02")


def test_an_unknown_error_code_is_refused() -> None:
    data = bytearray(encode_assignment(assignment(0)))
    data[4:6] = (77).to_bytes(2, "big")
    with pytest.raises(DecodeError, match="assignment: unknown error code 77"):
        decode_assignment(bytes(data))


def test_a_negative_delay_is_refused() -> None:
    data = encode_assignment(assignment(1))
    with pytest.raises(DecodeError, match="delay_ms must not be negative"):
        decode_assignment(data[:-4] + (-5).to_bytes(4, "big", signed=True))


@pytest.mark.parametrize(
    "awaiting",
    [
        Allocation.of((), [ConnectorTaskId("elsewhere", 0)]),
        Allocation.of(["orders-sink"]),
    ],
)
def test_awaiting_a_release_of_anything_but_an_assigned_task_is_refused(
    awaiting: Allocation,
) -> None:
    """A member would otherwise wait for a task it was not given, or for a connector."""
    data = encode_assignment(assignment(3, awaiting_release=awaiting))
    with pytest.raises(DecodeError, match="awaiting_release must be tasks of the assignment"):
        decode_assignment(data)


BROKEN_ALLOCATIONS = [
    (b"", "allocation is present but has no format byte"),
    (b"\x07", "unknown content format 7"),
    (b"\x01not zlib", "not a valid zlib stream"),
    (b"\x01" + zlib.compress(content([(0, "a")])[1:])[:-3], "zlib stream is truncated"),
    (b"\x01" + zlib.compress(content([(0, "a")])[1:]) + b"x", "1 bytes after its zlib"),
    (b"\x01" + zlib.compress(bytes(MAX_CONTENT_BYTES + 1)), "inflates to more than"),
    (content([(0, "a"), (0, "a")]), "connector name 'a' is listed twice"),
    (content([(0, "ab"), (3, "c")]), r"name prefix 3 is outside 0..2"),
    (content([(0, "a"), (-1, "c")]), r"name prefix -1 is outside"),
    (content([(0, "a")], connectors=[1]), r"connectors refer to a name outside 0..0"),
    (content([(0, "a")], range_counts=[]), "0 range counts for 1 names"),
    (content([(0, "a")], range_counts=[-1]), "a range count is negative"),
    (content([(0, "a")], [0], [1], [0], [1])[:-4], "range lengths declares 1 elements"),
    (content([(0, "a")], range_counts=[2], starts=[0], lengths=[1]), "add up to 2 but"),
    (content([(0, "a")], range_counts=[1], starts=[-1], lengths=[1]), "starts below 0"),
    (content([(0, "a")], range_counts=[1], starts=[0], lengths=[0]), "empty or negative"),
    (
        content([(0, "a")], range_counts=[1], starts=[INT32_MAX], lengths=[2]),
        "ends beyond 2147483647",
    ),
    (
        content([(0, "a")], range_counts=[1], starts=[0], lengths=[MAX_TASKS + 1]),
        f"holds {MAX_TASKS + 1} tasks, over {MAX_TASKS}",
    ),
    (content([(0, "a")], range_counts=[1], starts=[0], lengths=[1]) + b"x", "unexpected"),
]


@pytest.mark.parametrize(
    ("body", "message"), BROKEN_ALLOCATIONS, ids=[message for _, message in BROKEN_ALLOCATIONS]
)
def test_broken_allocations_are_refused(body: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode_subscription(v1_subscription(body))


def test_an_array_count_beyond_the_remaining_bytes_is_refused_before_reading() -> None:
    writer = Writer()
    writer.int8(0, "format")
    writer.int32(INT32_MAX, "names count")
    with pytest.raises(DecodeError, match="names declares 2147483647 elements of at least 4"):
        decode_subscription(v1_subscription(writer.getvalue()))


def test_a_negative_array_count_is_refused() -> None:
    writer = Writer()
    writer.int8(0, "format")
    writer.int32(-3, "names count")
    with pytest.raises(DecodeError, match="names has a negative count -3"):
        decode_subscription(v1_subscription(writer.getvalue()))


def test_front_coded_names_cannot_blow_up_memory() -> None:
    """Five bytes per entry could otherwise stand for a 32 KB name each."""
    count = MAX_NAME_CHARACTERS // INT16_MAX + 2
    names = [(0, "x" * INT16_MAX)] + [(INT16_MAX - 6, f"{i:06d}") for i in range(count)]
    with pytest.raises(DecodeError, match="connector names add up to more than"):
        decode_subscription(v1_subscription(content(names)))


def test_a_name_longer_than_a_string_is_refused() -> None:
    names = [(0, "x" * INT16_MAX), (INT16_MAX, "y")]
    with pytest.raises(DecodeError, match="is longer than 32767 bytes"):
        decode_subscription(v1_subscription(content(names)))


def test_errors_inside_a_compressed_allocation_keep_their_context() -> None:
    body = b"\x01" + zlib.compress(content([(0, "a"), (0, "a")])[1:])
    with pytest.raises(DecodeError, match=r"^subscription allocation: connector name 'a'"):
        decode_subscription(v1_subscription(body))
