"""files-to-kafka without Spark or a broker: its settings, its split of files into tasks,
its refusal to run under another split, and the sink's intents and row numbering."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka import TopicPartition

from worker.connectors.files.files_to_kafka import (
    SPLIT_KEY,
    FilesToKafkaConnector,
    FilesToKafkaSettings,
    SplitChangedError,
    check_ends,
    hold_split,
    parse_split,
)
from worker.kafka.sink import IntentLog, OutRow, numbered
from worker.plugins.api import ConnectorConfigError, TaskContext, parse_config
from worker.plugins.checkpoint_layout import checkpoint_dir_for

BASE = {
    "connector.class": "files-to-kafka",
    "input.path": "/data/in",
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "topic": "events",
}


def test_defaults() -> None:
    settings = parse_config(FilesToKafkaSettings, BASE)
    assert (settings.input_format, settings.input_schema, settings.key_field) == (
        "json",
        None,
        None,
    )
    assert (settings.max_files_per_trigger, settings.csv_header) == (100, True)
    assert (settings.exactly_once_support, settings.transaction_timeout_ms) == (
        "requested",
        60_000,
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("input.format", "avro"),
        ("max.files.per.trigger", "0"),
        ("topic", " "),
        ("input.path", ""),
        ("exactly.once.support", "maybe"),
        ("transaction.timeout.ms", "99999999999"),
    ],
)
def test_bad_settings_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConnectorConfigError, match=key):
        parse_config(FilesToKafkaSettings, {**BASE, key: value})


@pytest.mark.parametrize("text", ["2/2", "a/2", "1", "-1/3"])
def test_a_bad_split_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=SPLIT_KEY):
        parse_split(text)


def context(root: Path, task: int) -> TaskContext:
    return TaskContext("events", task, {}, {}, checkpoint_dir_for(root, "events", task))


def test_a_task_refuses_a_split_that_changed_under_any_checkpoint(tmp_path: Path) -> None:
    hold_split(context(tmp_path, 0), 3)
    hold_split(context(tmp_path, 2), 3)
    hold_split(context(tmp_path, 0), 3)
    with pytest.raises(SplitChangedError, match=r"Task 0 .* split over 3 tasks; .* over 2 now"):
        hold_split(context(tmp_path, 1), 2)
    assert not (checkpoint_dir_for(tmp_path, "events", 1) / "files-split").exists()


def test_a_missing_input_directory_is_named(tmp_path: Path) -> None:
    settings = parse_config(FilesToKafkaSettings, {**BASE, "input.path": str(tmp_path / "no")})
    with pytest.raises(FileNotFoundError, match=r"input.path '.*/no' is not a directory"):
        check_ends(settings, context(tmp_path, 0))


def test_validate_names_topic_creation_problems_beside_the_settings() -> None:
    config = {
        **BASE,
        "topic": "events/today",
        "max.files.per.trigger": "0",
        "topic.creation.default.partitions": "3",
    }
    with pytest.raises(ConnectorConfigError) as refused:
        FilesToKafkaConnector().validate(config)
    assert {p.key for p in refused.value.problems} == {
        "topic",
        "max.files.per.trigger",
        "topic.creation.default.replication.factor",
    }


def test_validate_takes_topic_creation_keys() -> None:
    config = {
        **BASE,
        "topic.creation.default.partitions": "3",
        "topic.creation.default.replication.factor": "-1",
        "topic.creation.default.cleanup.policy": "compact",
    }
    assert FilesToKafkaConnector().validate(config) == parse_config(FilesToKafkaSettings, config)


def test_validate_names_converter_problems_beside_the_settings() -> None:
    config = {
        **BASE,
        "max.files.per.trigger": "0",
        "value.converter": "avro",
        "value.converter.avro.schema": '"long"',
        "key.converter": "json",
        "key.schema": "id LONG",
    }
    with pytest.raises(ConnectorConfigError) as refused:
        FilesToKafkaConnector().validate(config)
    assert [p.key for p in refused.value.problems] == [
        "max.files.per.trigger",
        "key.schema",
        "value.converter.avro.schema.id",
    ], "a source writes its rows' own schema, and Confluent's format needs the id"


def test_one_task_config_per_task() -> None:
    configs = FilesToKafkaConnector().task_configs(BASE, 3)
    assert [c[SPLIT_KEY] for c in configs] == ["0/3", "1/3", "2/3"]
    assert all(c.items() >= BASE.items() for c in configs)


def test_rows_are_numbered_within_their_origin() -> None:
    rows = [OutRow(origin, None, b"") for origin in ["a", "a", "b", "a", "b"]]
    assert [identity for identity, _ in numbered(rows)] == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
        ("a", 2),
        ("b", 1),
    ]


def test_an_intent_is_recorded_once_and_forgotten_after_later_batches(tmp_path: Path) -> None:
    intents = IntentLog(tmp_path / "intents")
    first = {TopicPartition("t:x", 0): 5, TopicPartition("t:x", 1): 9}
    assert intents.open(3, lambda: first) == (first, False)
    assert intents.open(3, lambda: {TopicPartition("t:x", 0): 99}) == (first, True)
    intents.open(4, lambda: first)
    intents.forget_before(4)
    assert sorted(p.name for p in (tmp_path / "intents").iterdir()) == ["4.json"]
