"""Topic creation (KIP-158) against Apache Kafka: the admin edge on the broker directly
(the group that takes a name decides partitions and configs, racing creators both
succeed, -1 means the broker's default, a refusal names the settings), and one worker
with `topic.creation.enable=false` whose files-to-kafka task stops at a missing topic
naming the keys. The created-and-published path on a worker, on both brokers, is in
test_files_to_kafka.py."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.processes import free_port, ready_worker
from tests.support.rest_client import Api
from worker.kafka.client import BlockingKafka, KafkaUnavailableError, TopicCreationRefusedError
from worker.kafka.topic_admin import ensure_source_topic
from worker.kafka.topic_creation import (
    DEFAULT_PARTITIONS_KEY,
    DEFAULT_REPLICATION_FACTOR_KEY,
    ENABLE_KEY,
    NewTopicSpec,
    TopicCreation,
    topic_creation,
)

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


def unique(prefix: str) -> str:
    """A topic name no other test uses: the broker lives for the whole session."""
    return f"{prefix}-{free_port()}"


def topic_configs(bootstrap_servers: str, topic: str) -> dict[str, str]:
    """The topic's configs as the broker describes them, defaults included."""

    async def describe() -> dict[str, str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
        await admin.start()
        try:
            [response] = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic)]
            )
        finally:
            await admin.close()
        [resource] = response.resources
        return {str(entry[0]): str(entry[1]) for entry in resource[4]}

    return asyncio.run(describe())


def creation(**settings: str) -> TopicCreation:
    rules = topic_creation(settings)
    assert rules is not None
    return rules


def with_kafka(bootstrap_servers: str, action: Callable[[BlockingKafka], object]) -> object:
    with BlockingKafka(bootstrap_servers, "test-topic-creation") as kafka:
        return action(kafka)


def test_a_missing_topic_is_created_by_the_group_that_takes_it(broker: EmbeddedBroker) -> None:
    servers = broker.bootstrap_servers
    rules = creation(
        **{
            DEFAULT_PARTITIONS_KEY: "2",
            DEFAULT_REPLICATION_FACTOR_KEY: "1",
            "topic.creation.default.retention.ms": "3600000",
            "topic.creation.groups": "wide",
            "topic.creation.wide.include": "wide-.*",
            "topic.creation.wide.partitions": "5",
            "topic.creation.wide.cleanup.policy": "compact",
        }
    )
    narrow = creation(**{DEFAULT_PARTITIONS_KEY: "1", DEFAULT_REPLICATION_FACTOR_KEY: "1"})
    plain, wide = unique("plain"), unique("wide")
    with BlockingKafka(servers, "test-topic-creation") as kafka:
        for topic in (plain, wide):
            ensure_source_topic(kafka, servers, topic, rules, worker_enabled=True)
        assert kafka.partitions(plain) == [0, 1]
        assert kafka.partitions(wide) == [0, 1, 2, 3, 4]
        # An existing topic is left as it is, whatever the rules say now.
        ensure_source_topic(kafka, servers, wide, narrow, worker_enabled=True)
        assert len(kafka.partitions(wide)) == 5
    assert topic_configs(servers, plain)["retention.ms"] == "3600000"
    assert topic_configs(servers, plain)["cleanup.policy"] == "delete"
    assert topic_configs(servers, wide)["cleanup.policy"] == "compact"
    assert topic_configs(servers, wide)["retention.ms"] != "3600000"  # not inherited


def test_tasks_racing_to_create_a_topic_both_go_on(broker: EmbeddedBroker) -> None:
    spec = NewTopicSpec(unique("raced"), 3, 1, origin="test")
    start = threading.Barrier(2)
    created: list[bool] = []
    failures: list[BaseException] = []

    def race() -> None:
        try:
            with BlockingKafka(broker.bootstrap_servers, "test-racer") as kafka:
                start.wait(30)
                created.append(kafka.ensure_topic(spec))
                assert kafka.partitions(spec.name) == [0, 1, 2]
        except BaseException as exc:
            failures.append(exc)

    racers = [threading.Thread(target=race) for _ in range(2)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(120)
    assert not failures, failures
    assert sorted(created) == [False, True]


def test_minus_one_takes_the_brokers_defaults(broker: EmbeddedBroker) -> None:
    """The development broker's num.partitions is 1."""
    spec = NewTopicSpec(unique("defaults"), -1, -1)
    with BlockingKafka(broker.bootstrap_servers, "test-topic-creation") as kafka:
        assert kafka.ensure_topic(spec)
        assert kafka.partitions(spec.name) == [0]
        assert not kafka.ensure_topic(spec)


def test_a_refused_topic_names_the_broker_reason_and_the_settings(
    broker: EmbeddedBroker,
) -> None:
    rules = creation(
        **{
            DEFAULT_PARTITIONS_KEY: "1",
            DEFAULT_REPLICATION_FACTOR_KEY: "3",  # a single broker cannot hold 3 replicas
            "topic.creation.default.retention.ms": "3600000",
        }
    )
    topic = unique("refused")
    with (
        BlockingKafka(broker.bootstrap_servers, "test-topic-creation") as kafka,
        pytest.raises(TopicCreationRefusedError) as refused,
    ):
        ensure_source_topic(kafka, broker.bootstrap_servers, topic, rules, worker_enabled=True)
    message = str(refused.value)
    assert f"refused to create topic {topic!r}" in message
    assert "replication factor 3" in message and "topic.creation.default.*" in message
    assert "InvalidReplicationFactorError" in message
    with BlockingKafka(broker.bootstrap_servers, "test-topic-creation") as kafka:
        bad_config = NewTopicSpec(unique("bad-config"), 1, 1, (("no.such.config", "1"),))
        with pytest.raises(TopicCreationRefusedError, match=r"config name: no\.such\.config"):
            kafka.ensure_topic(bad_config)
        assert not kafka.topic_exists(topic)


def test_without_the_rules_or_the_workers_leave_a_missing_topic_is_not_created(
    broker: EmbeddedBroker,
) -> None:
    servers = broker.bootstrap_servers
    rules = creation(**{DEFAULT_PARTITIONS_KEY: "1", DEFAULT_REPLICATION_FACTOR_KEY: "1"})
    topic = unique("absent")
    with BlockingKafka(servers, "test-topic-creation") as kafka:
        with pytest.raises(KafkaUnavailableError) as no_rules:
            ensure_source_topic(kafka, servers, topic, None, worker_enabled=True)
        with pytest.raises(KafkaUnavailableError) as no_leave:
            ensure_source_topic(kafka, servers, topic, rules, worker_enabled=False)
        assert not kafka.topic_exists(topic)
    assert DEFAULT_PARTITIONS_KEY in str(no_rules.value)
    assert DEFAULT_REPLICATION_FACTOR_KEY in str(no_rules.value)
    assert f"{ENABLE_KEY}=false" in str(no_leave.value)


def test_a_worker_that_creates_no_topics_fails_the_task_naming_the_key(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    servers = broker.bootstrap_servers
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    topic = unique("not-created")
    config = {
        "connector.class": "files-to-kafka",
        "input.path": str(incoming),
        "kafka.bootstrap.servers": servers,
        "topic": topic,
        DEFAULT_PARTITIONS_KEY: "2",
        DEFAULT_REPLICATION_FACTOR_KEY: "-1",
    }
    with ready_worker("no-topic-creation", servers, tmp_path, [f"{ENABLE_KEY}=false"]) as worker:
        api = Api(worker.url)
        api.call("PUT", "/connectors/uncreated/config", 201, json=config)
        status = api.wait_states("uncreated", "RUNNING", ["FAILED"])
    trace = status["tasks"][0]["trace"]
    assert f"Kafka topic {topic!r} does not exist" in trace
    assert f"{ENABLE_KEY}=false" in trace
    assert not with_kafka(servers, lambda kafka: kafka.topic_exists(topic))
