"""kafka-to-files without Spark or a broker: its settings and its split of partitions into
tasks (how partitions move when the split changes: test_partition_takeover)."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from worker.connectors.files.kafka_to_files import KafkaToFilesSettings, settings_of
from worker.connectors.kafka_sink import default_transform, split_partitions
from worker.kafka.source import format_assignment, parse_assignment
from worker.plugins.api import ConnectorConfigError, parse_config

BASE = {
    "connector.class": "kafka-to-files",
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "topics": "orders",
    "output.path": "/data/orders",
}


def test_defaults_and_topics_list() -> None:
    settings = parse_config(KafkaToFilesSettings, {**BASE, "topics": " a, b,a ,"})
    assert settings.topics == ("a", "b")
    assert settings.output_format == "parquet"
    assert settings.transform_sql is None
    assert (settings.starting_offsets, settings.kafka_client) == ("earliest", "auto")


def test_without_transform_sql_bytes_are_written_as_strings_and_converted_values_as_they_are() -> (
    None
):
    _, bytes_both = settings_of(BASE)
    assert default_transform(bytes_both) == (
        "SELECT CAST(key AS STRING) AS key, CAST(value AS STRING) AS value, "
        "topic, partition, offset, timestamp FROM source"
    )
    _, json_value = settings_of({**BASE, "value.converter": "json"})
    assert default_transform(json_value).startswith(
        "SELECT CAST(key AS STRING) AS key, value, topic"
    )


def test_a_converter_problem_and_a_setting_problem_are_named_together() -> None:
    with pytest.raises(ConnectorConfigError) as error:
        settings_of({**BASE, "output.format": "avro", "value.converter": "Protobuf"})
    assert [p.key for p in error.value.problems] == ["output.format", "value.converter"]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("output.format", "avro"),
        ("kafka.client", "rdkafka"),
        ("starting.offsets", "yesterday"),
        ("trigger.interval.ms", "10"),
    ],
)
def test_invalid_values_are_named(key: str, value: str) -> None:
    with pytest.raises(ConnectorConfigError) as error:
        parse_config(KafkaToFilesSettings, {**BASE, key: value})
    assert [p.key for p in error.value.problems] == [key]


def test_a_missing_bootstrap_server_is_named() -> None:
    config = {k: v for k, v in BASE.items() if k != "kafka.bootstrap.servers"}
    with pytest.raises(ConnectorConfigError, match=r"kafka\.bootstrap\.servers: missing"):
        parse_config(KafkaToFilesSettings, config)


def test_partitions_spread_over_tasks_and_stay_put_when_partitions_are_added() -> None:
    before = split_partitions({"a": [0, 1, 2, 3], "b": [0, 1]}, {"a": 0, "b": 1}, 3)
    after = split_partitions({"a": [0, 1, 2, 3, 4, 5], "b": [0, 1, 2]}, {"a": 0, "b": 1}, 3)
    assert sorted(len(t) for t in before) == [2, 2, 2]
    for old, new in zip(before, after, strict=True):
        assert set(old) <= set(new)
    assert sum(len(t) for t in after) == 9


def test_no_task_without_partitions() -> None:
    assert split_partitions({"a": [0, 1]}, {"a": 0}, 4) == [
        [TopicPartition("a", 0)],
        [TopicPartition("a", 1)],
    ]


def test_assignment_round_trips_and_topic_names_may_hold_colons() -> None:
    partitions = [TopicPartition("a:b", 3), TopicPartition("c", 0)]
    assert parse_assignment(format_assignment(partitions)) == partitions
    with pytest.raises(ValueError, match="topic:partition"):
        parse_assignment("orders")
