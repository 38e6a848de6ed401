"""kafka-to-files without Spark or a broker: its settings, its split of partitions into
tasks, and its refusal to read a partition another task's checkpoint holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka import TopicPartition

from worker.connectors.files.kafka_to_files import KafkaToFilesSettings, settings_of
from worker.connectors.kafka_sink import (
    PartitionMovedError,
    check_not_read_elsewhere,
    default_transform,
    split_partitions,
)
from worker.kafka.source import format_assignment, parse_assignment
from worker.plugins.api import ConnectorConfigError, TaskContext, parse_config
from worker.runtime.checkpoint_layout import checkpoint_dir_for
from worker.runtime.checkpoint_offsets import alter_offsets

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
        ("topics", " , "),
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
    before = split_partitions({"a": [0, 1, 2, 3], "b": [0, 1]}, ("a", "b"), 3)
    after = split_partitions({"a": [0, 1, 2, 3, 4, 5], "b": [0, 1, 2]}, ("a", "b"), 3)
    assert sorted(len(t) for t in before) == [2, 2, 2]
    for old, new in zip(before, after, strict=True):
        assert set(old) <= set(new)
    assert sum(len(t) for t in after) == 9


def test_no_task_without_partitions() -> None:
    assert split_partitions({"a": [0, 1]}, ("a",), 4) == [
        [TopicPartition("a", 0)],
        [TopicPartition("a", 1)],
    ]


def test_assignment_round_trips_and_topic_names_may_hold_colons() -> None:
    partitions = [TopicPartition("a:b", 3), TopicPartition("c", 0)]
    assert parse_assignment(format_assignment(partitions)) == partitions
    with pytest.raises(ValueError, match="topic:partition"):
        parse_assignment("orders")


def committed_checkpoint(root: Path, task: int, offsets: dict[str, dict[str, int]]) -> None:
    """A task checkpoint with one committed batch ending at `offsets`, as Spark writes it."""
    checkpoint = checkpoint_dir_for(root, "orders", task)
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0}\n{}')
    alter_offsets(checkpoint, {0: offsets})


def context(root: Path, task: int) -> TaskContext:
    return TaskContext("orders", task, {}, {}, checkpoint_dir_for(root, "orders", task))


def test_a_partition_read_by_another_task_is_refused(tmp_path: Path) -> None:
    committed_checkpoint(tmp_path, 1, {"orders": {"2": 40, "3": 17}})
    with pytest.raises(PartitionMovedError, match=r"orders:2 were read by task 1 .*tasks.max"):
        check_not_read_elsewhere(context(tmp_path, 0), parse_assignment("orders:0,orders:2"))


def test_own_partitions_and_other_topics_pass(tmp_path: Path) -> None:
    committed_checkpoint(tmp_path, 0, {"orders": {"0": 5}})
    committed_checkpoint(tmp_path, 1, {"returns": {"0": 9}})
    check_not_read_elsewhere(context(tmp_path, 0), parse_assignment("orders:0,orders:1"))
