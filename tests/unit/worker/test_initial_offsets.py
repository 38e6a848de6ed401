"""KIP-995's `initial_offsets`, checked before anything is written: a sink's by Connect's
Kafka partitions, of topics it reads; a source's by task, as `PATCH .../offsets` takes
them."""

from __future__ import annotations

from typing import Any

import pytest

from worker.connectors.files.files_to_kafka import FilesToKafkaConnector
from worker.connectors.files.kafka_to_files import KafkaToFilesConnector
from worker.connectors.generator import GeneratorConnector
from worker.connectors.jdbc.jdbc_to_kafka import JdbcToKafkaConnector
from worker.plugins.api import Connector
from worker.runtime.task_offsets import (
    MAX_POSITION,
    InitialOffsets,
    OffsetsError,
    initial_offsets,
)

SINK = {"topics": "orders,refunds"}
REGEX_SINK = {"topics.regex": "shop-.*"}
SOURCE = {"tasks.max": "2"}


def kafka(topic: Any, partition: Any, offset: Any = 0) -> tuple[object, object]:
    position = None if offset is None else {"kafka_offset": offset}
    return {"kafka_topic": topic, "kafka_partition": partition}, position


def test_a_sink_starts_each_partition_at_its_offset() -> None:
    entries = [kafka("orders", 0, 42), kafka("refunds", "3", "7"), kafka("orders", 1, None)]

    seed = initial_offsets(entries, "sink", SINK)

    assert seed == InitialOffsets(positions={("orders", 0): 42, ("refunds", 3): 7})
    assert seed.handover() == {"orders": {"0": 42}, "refunds": {"3": 7}}


def test_a_sink_by_regex_takes_the_topics_its_regex_matches() -> None:
    seed = initial_offsets([kafka("shop-eu", 2, 5)], "sink", REGEX_SINK)

    assert seed.positions == {("shop-eu", 2): 5}
    with pytest.raises(OffsetsError, match=r"does not read topic 'shop'"):
        initial_offsets([kafka("shop", 0)], "sink", REGEX_SINK)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (kafka("payroll", 0), r"initial_offsets\[0\]\.partition: the connector does not read"),
        (kafka("orders", -1), r"kafka_partition must be an integer from 0 to 2147483647"),
        (kafka("orders", 2**31), r"kafka_partition must be an integer"),
        (kafka("orders", True), r"kafka_partition must be an integer"),
        (kafka("orders", 0, -5), r"kafka_offset must be an integer from 0"),
        (kafka("orders", 0, MAX_POSITION + 1), r"kafka_offset must be an integer"),
        (kafka("orders", 0, 1.5), r"kafka_offset must be an integer"),
        (kafka("orders", 0, "12a"), r"kafka_offset must be an integer"),
        (kafka("", 0), r"kafka_topic must be a topic name"),
        (({"task": 0}, {"kafka_offset": 1}), r"must be \{\"kafka_topic\": topic"),
        (({"kafka_topic": "orders"}, {"kafka_offset": 1}), r"must be \{\"kafka_topic\""),
        (
            ({"kafka_topic": "orders", "kafka_partition": 0, "x": 1}, {"kafka_offset": 1}),
            r"must be \{\"kafka_topic\"",
        ),
        (({"kafka_topic": "orders", "kafka_partition": 0}, {"offset": 1}), r"must be null or"),
        (({"kafka_topic": "orders", "kafka_partition": 0}, 5), r"must be null or"),
    ],
)
def test_a_bad_sink_offset_is_refused_naming_where(
    entry: tuple[object, object], message: str
) -> None:
    with pytest.raises(OffsetsError, match=message):
        initial_offsets([entry], "sink", SINK)


def test_a_partition_given_twice_is_refused() -> None:
    with pytest.raises(OffsetsError, match=r"initial_offsets\[1\]\.partition: orders:0 is given"):
        initial_offsets([kafka("orders", 0, 1), kafka("orders", "0", 2)], "sink", SINK)


def test_a_source_starts_each_task_after_its_own_offset() -> None:
    entries = [({"task": 1, "source": 0}, {"offset": 500}), ({"task": 0}, None)]

    seed = initial_offsets(entries, "source", SOURCE)

    assert seed == InitialOffsets(marks={1: {"offset": 500}})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (({"task": 2}, {"offset": 1}), r"has no task 2 \(tasks.max=2\)"),
        (({"task": 0, "source": 1}, {"offset": 1}), r"source 0 only"),
        (({"task": -1}, {"offset": 1}), r"must be \{\"task\": n, \"source\": i\}"),
        (({"kafka_topic": "t", "kafka_partition": 0}, {"offset": 1}), r"\"task\": n"),
        (({"task": 0}, {"offset": -1}), r"offset\.offset must be an integer from 0"),
        (({"task": 0}, {"offset": "12"}), r"offset\.offset must be an integer"),
        (({"task": 0}, [1]), r"offset must be a JSON object"),
    ],
)
def test_a_bad_source_offset_is_refused_naming_where(
    entry: tuple[object, object], message: str
) -> None:
    with pytest.raises(OffsetsError, match=message):
        initial_offsets([entry], "source", SOURCE)


def test_a_task_given_twice_is_refused() -> None:
    entries = [({"task": 0}, {"offset": 1}), ({"task": 0, "source": 0}, None)]

    with pytest.raises(OffsetsError, match=r"initial_offsets\[1\]\.partition: task 0 is given"):
        initial_offsets(entries, "source", SOURCE)


def test_no_offsets_at_all_is_refused() -> None:
    with pytest.raises(OffsetsError, match="initial_offsets cannot be empty"):
        initial_offsets([], "sink", SINK)


@pytest.mark.parametrize(
    ("connector", "takes"),
    [
        (KafkaToFilesConnector, True),
        (JdbcToKafkaConnector, True),
        (GeneratorConnector, False),
        (FilesToKafkaConnector, False),
    ],
)
def test_sinks_and_sources_bound_to_no_files_take_initial_offsets(
    connector: type[Connector], takes: bool
) -> None:
    assert connector.takes_initial_offsets() is takes
