"""`topics.regex` on the Kafka sinks (Connect's key): exactly one of it and `topics`, RE2
syntax, whole-name matches, never the worker's own topics, and a split that never moves
a partition when a new topic matches."""

from __future__ import annotations

import pytest

from worker.connectors.files.kafka_to_files import settings_of
from worker.connectors.kafka_sink import TopicChoice, split_partitions, topic_slots
from worker.plugins.api import ConnectorConfigError

BASE = {
    "connector.class": "kafka-to-files",
    "kafka.bootstrap.servers": "127.0.0.1:9092",
    "output.path": "/data/orders",
}


def problems(config: dict[str, str]) -> dict[str, str]:
    with pytest.raises(ConnectorConfigError) as error:
        settings_of(config)
    return {p.key: p.message for p in error.value.problems}


@pytest.mark.parametrize(
    "topics",
    [{}, {"topics": " , "}, {"topics": "a", "topics.regex": "a.*"}],
    ids=["neither", "empty-list", "both"],
)
def test_exactly_one_of_topics_and_topics_regex(topics: dict[str, str]) -> None:
    assert problems({**BASE, **topics}) == {"topics": "set exactly one of topics and topics.regex"}


def test_a_regex_re2_cannot_compile_is_named() -> None:
    found = problems({**BASE, "topics.regex": "(a)\\1"})
    assert list(found) == ["topics.regex"]
    assert "RE2 syntax" in found["topics.regex"]


def test_a_dead_letter_queue_the_regex_matches_is_refused() -> None:
    found = problems(
        {
            **BASE,
            "topics.regex": "orders.*",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "orders-dlq",
        }
    )
    assert "is a topic this connector reads" in found["errors.deadletterqueue.topic.name"]


def test_the_regex_matches_whole_names_and_never_the_workers_topics() -> None:
    choice = TopicChoice((), "orders.*|sh-.*")
    present = {"orders", "orders-eu", "old-orders", "sh-configs", "sh-status", "__consumer_offsets"}
    internal = frozenset({"sh-configs", "sh-status", "__consumer_offsets"})
    assert choice.matching(present, internal) == ("orders", "orders-eu")
    assert "old-orders" not in choice
    assert TopicChoice((), ".*").matching(present, internal) == (
        "old-orders",
        "orders",
        "orders-eu",
    )


def test_named_topics_keep_their_order_and_are_not_looked_up() -> None:
    choice = TopicChoice(("b", "a"), None)
    assert choice.matching((), frozenset()) == ("b", "a")


def test_a_new_match_moves_no_partition_already_assigned() -> None:
    choice = TopicChoice((), ".*")
    before_topics = ("m", "z")
    after_topics = ("a", "m", "z")
    partitions = {"a": [0, 1, 2], "m": [0, 1, 2], "z": [0, 1]}
    for tasks in (2, 3, 5):
        before = split_partitions(partitions, topic_slots(choice, before_topics), tasks)
        after = split_partitions(partitions, topic_slots(choice, after_topics), tasks)
        placed_before = {tp: i for i, task in enumerate(before) for tp in task}
        placed_after = {tp: i for i, task in enumerate(after) for tp in task}
        assert all(placed_after[tp] == i for tp, i in placed_before.items())
