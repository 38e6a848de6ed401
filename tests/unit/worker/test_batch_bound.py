from __future__ import annotations

from aiokafka import TopicPartition
from hypothesis import given
from hypothesis import strategies as st

from worker.kafka.batch_bound import capped_ends

A, B, C = (TopicPartition("orders", p) for p in range(3))


def test_a_backlog_is_split_in_proportion_to_what_each_partition_has_waiting() -> None:
    starts = {A: 0, B: 100, C: 7}
    ends = {A: 300, B: 200, C: 7}
    assert capped_ends(starts, ends, 100) == {A: 75, B: 125, C: 7}


def test_what_fits_in_the_bound_is_read_whole() -> None:
    assert capped_ends({A: 10, B: 0}, {A: 60, B: 50}, 100) == {A: 60, B: 50}


def test_a_share_below_one_record_still_moves_its_partition() -> None:
    """As Spark's source does: the batch may pass the bound by under a record a partition."""
    assert capped_ends({A: 0, B: 0}, {A: 1000, B: 1}, 10) == {A: 9, B: 1}


def test_an_end_behind_its_start_is_left_as_the_broker_answered() -> None:
    assert capped_ends({A: 50, B: 0}, {A: 40, B: 500}, 100) == {A: 40, B: 100}


@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1, max_size=8),
    st.integers(1, 10**6),
)
def test_every_batch_moves_forward_within_the_bound(
    spans: list[tuple[int, int]], limit: int
) -> None:
    partitions = [TopicPartition("t", p) for p in range(len(spans))]
    starts = {tp: start for tp, (start, _) in zip(partitions, spans, strict=True)}
    ends = {tp: start + size for tp, (start, size) in zip(partitions, spans, strict=True)}
    capped = capped_ends(starts, ends, limit)
    read = {tp: capped[tp] - starts[tp] for tp in partitions}
    assert all(0 <= read[tp] <= ends[tp] - starts[tp] for tp in partitions)
    assert sum(read.values()) <= limit + len(partitions)
    assert all(read[tp] > 0 for tp in partitions if ends[tp] > starts[tp])
