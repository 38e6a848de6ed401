"""A Kafka sink's offsets in Connect's shape (KIP-875): shown by topic partition whatever
task holds it, and a PATCH by topic partition turned into each holding task's new end
offset."""

from __future__ import annotations

import pytest

from worker.runtime.task_offsets import (
    OffsetsError,
    SourceOffset,
    sink_alterations,
    sink_entries,
)

COMMITTED = [
    SourceOffset(0, 0, {"orders": {"0": 7, "2": 3}}),
    SourceOffset(1, 0, {"orders": {"1": 5}, "refunds": {"0": 2}}),
]


def entry(topic: str, partition: int, offset: int | None) -> tuple[object, object]:
    return (
        {"kafka_topic": topic, "kafka_partition": partition},
        None if offset is None else {"kafka_offset": offset},
    )


def test_each_partition_is_shown_once_in_connects_shape_sorted() -> None:
    assert sink_entries(COMMITTED) == [
        entry("orders", n, o) for n, o in ((0, 7), (1, 5), (2, 3))
    ] + [entry("refunds", 0, 2)]


def test_a_patch_moves_the_partitions_in_the_task_that_holds_them_and_keeps_the_rest() -> None:
    altered = sink_alterations([entry("orders", 2, 10), entry("refunds", 0, "4")], COMMITTED)  # type: ignore[arg-type]
    assert altered == {
        0: {0: {"orders": {"0": 7, "2": 10}}},
        1: {0: {"orders": {"1": 5}, "refunds": {"0": 4}}},
    }
    assert COMMITTED[0].offset == {"orders": {"0": 7, "2": 3}}, "the committed offsets are kept"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([entry("orders", 9, 1)], "offsets[0].partition: no task of the connector has committed"),
        ([entry("orders", 0, None)], "offsets[0].offset: a sink's partition cannot be reset"),
        ([entry("orders", 0, 1), entry("orders", 0, 2)], "offsets[1].partition: orders:0 is given"),
        ([({"task": 0}, {"kafka_offset": 1})], 'offsets[0].partition must be {"kafka_topic"'),
        ([entry("orders", 0, -1)], "offsets[0].offset.kafka_offset must be an integer"),
    ],
)
def test_a_patch_names_the_entry_it_refuses(
    entries: list[tuple[object, object]], message: str
) -> None:
    with pytest.raises(OffsetsError) as refused:
        sink_alterations(entries, COMMITTED)
    assert str(refused.value).startswith(message), refused.value
