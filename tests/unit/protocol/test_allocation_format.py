"""The compact allocation encoding: ranges, front-coded names, optional compression."""

from __future__ import annotations

import pytest

from protocol.allocation_format import (
    COMPRESSION_THRESHOLD,
    ContentFormat,
    read_allocation,
    write_allocation,
)
from protocol.codec import encode_assignment, encode_subscription
from protocol.errors import EncodeError
from protocol.messages import Allocation, Assignment, ConnectorTaskId, Subscription
from protocol.wire import INT16_MAX, INT32_MAX, Reader, Writer
from tests.unit.protocol.samples import assignment, subscription, tasks


def encoded(allocation: Allocation) -> bytes:
    writer = Writer()
    write_allocation(writer, allocation, "allocation")
    return writer.getvalue()


def decoded(data: bytes) -> Allocation:
    reader = Reader(data, "test")
    allocation = read_allocation(reader, "allocation")
    reader.expect_end("the test payload")
    return allocation


def test_the_empty_allocation_is_null() -> None:
    assert encoded(Allocation()) == b"\xff\xff\xff\xff"
    assert decoded(b"\xff\xff\xff\xff") == Allocation()


def test_consecutive_tasks_take_one_range() -> None:
    many = Allocation.of(tasks=tasks("c", *range(1000)))
    few = Allocation.of(tasks=tasks("c", 0))
    assert len(encoded(many)) == len(encoded(few))
    assert decoded(encoded(many)) == many


def test_gaps_split_ranges() -> None:
    allocation = Allocation.of(["c"], tasks("c", 0, 1, 2, 4, 7, 8, INT32_MAX))
    assert decoded(encoded(allocation)) == allocation


def test_a_connector_and_its_tasks_are_independent() -> None:
    only_tasks = Allocation.of(tasks=tasks("c", 1))
    only_connector = Allocation.of(["c"])
    assert decoded(encoded(only_tasks)) == only_tasks
    assert decoded(encoded(only_connector)) == only_connector


def test_names_sharing_prefixes_are_front_coded() -> None:
    long_prefix = "x" * 1000
    names = [f"{long_prefix}-{i}" for i in range(5)]
    allocation = Allocation.of(names)
    assert len(encoded(allocation)) < len(long_prefix) + 5 * 16 + 64
    assert decoded(encoded(allocation)) == allocation


def test_small_contents_stay_plain() -> None:
    data = encoded(Allocation.of(["a"], tasks("a", 0)))
    assert len(data) < COMPRESSION_THRESHOLD
    assert data[4] == ContentFormat.PLAIN


def test_large_repetitive_contents_are_compressed() -> None:
    allocation = Allocation.of(
        tasks=[ConnectorTaskId(f"connector-{c:04d}", c % 100) for c in range(1000)]
    )
    data = encoded(allocation)
    assert data[4] == ContentFormat.ZLIB
    assert len(data) < 3000
    assert decoded(data) == allocation


def test_incompressible_contents_stay_plain_even_when_large() -> None:
    noise = bytes(range(256)).hex()
    allocation = Allocation.of([noise[i : i + 50] + str(i) for i in range(0, 500, 7)])
    data = encoded(allocation)
    assert len(data) >= COMPRESSION_THRESHOLD
    assert decoded(data) == allocation


@pytest.mark.parametrize("task", [-1, INT32_MAX + 1])
def test_tasks_outside_int32_are_refused(task: int) -> None:
    with pytest.raises(EncodeError, match=r"is outside 0\.\.2147483647"):
        encoded(Allocation.of(tasks=tasks("c", task)))


def test_names_longer_than_a_string_are_refused() -> None:
    with pytest.raises(EncodeError, match="connector name is 32768 bytes"):
        encoded(Allocation.of(["x" * (INT16_MAX + 1)]))


def test_names_longer_than_a_string_are_refused_even_with_a_short_suffix() -> None:
    longest = "x" * INT16_MAX
    with pytest.raises(EncodeError, match="is too long"):
        encoded(Allocation.of([longest, longest + "y"]))


def test_names_that_are_not_unicode_text_are_refused() -> None:
    with pytest.raises(EncodeError, match="cannot be written as UTF-8"):
        encoded(Allocation.of(["bad\udc80"]))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (subscription(2, worker_id="w" * (INT16_MAX + 1)), "worker_id is 32768 bytes"),
        (subscription(0, config_offset=2**63), "config_offset = .* does not fit a signed int64"),
        (subscription(1, max_version=0), "needs a supported version within 1..32767, got 0"),
        (subscription(1, max_version=INT16_MAX + 1), "needs a supported version within"),
    ],
)
def test_unrepresentable_subscriptions_are_refused(value: Subscription, message: str) -> None:
    with pytest.raises(EncodeError, match=message):
        encode_subscription(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (assignment(1, delay_ms=-1), "delay_ms must not be negative"),
        (assignment(1, delay_ms=INT32_MAX + 1), "delay_ms = 2147483648 does not fit"),
        (assignment(0, leader_url="\ud800"), "leader_url cannot be written as UTF-8"),
    ],
)
def test_unrepresentable_assignments_are_refused(value: Assignment, message: str) -> None:
    with pytest.raises(EncodeError, match=message):
        encode_assignment(value)
