"""The blocking Kafka client against the real broker: true end offsets, exact ranges."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.kafka_topics import keyed, new_topic, produce
from worker.kafka.client import BlockingKafka, KafkaUnavailableError, Outgoing

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


@pytest.fixture
def broker(each_broker: EmbeddedBroker) -> EmbeddedBroker:
    """In the Tansu smoke set: every test here runs on Apache Kafka and on Tansu."""
    return each_broker


def test_end_offsets_count_every_record_of_multi_record_batches(broker: EmbeddedBroker) -> None:
    """Tansu's ListOffsets(latest) stops at the newest batch's base offset + 1; a batch of
    many records is what exposes it."""
    topic = new_topic(broker.bootstrap_servers, "ends", 2)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    with BlockingKafka(broker.bootstrap_servers, "test") as kafka:
        assert kafka.end_offsets(tps) == {tps[0]: 0, tps[1]: 0}
        for _ in range(3):
            kafka.publish(topic, [Outgoing(None, b"x", partition=0) for _ in range(50)])
        assert kafka.end_offsets(tps) == {tps[0]: 150, tps[1]: 0}
        assert kafka.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}


def test_fetch_returns_exactly_the_range_with_headers(broker: EmbeddedBroker) -> None:
    topic = new_topic(broker.bootstrap_servers, "range", 1)
    records = [
        Outgoing(r.key, r.value, headers=(("n", str(i).encode()),), partition=0)
        for i, r in enumerate(keyed(range(500)))
    ]
    produce(broker.bootstrap_servers, topic, records)
    tp = TopicPartition(topic, 0)
    with BlockingKafka(broker.bootstrap_servers, "test") as kafka:
        fetched = [r for chunk in kafka.fetch(tp, 120, 380) for r in chunk]
        assert [r.offset for r in fetched] == list(range(120, 380))
        assert fetched[0].key == b"key-120" and fetched[-1].value == b"value-379"
        assert fetched[5].headers == (("n", b"125"),)


def test_a_topic_lists_its_partitions_and_a_missing_one_is_named(broker: EmbeddedBroker) -> None:
    """Apache Kafka answers a metadata request for no topics with none (Tansu with all):
    a client that has not asked for the topic by name must still find it."""
    topic = new_topic(broker.bootstrap_servers, "listed", 3)
    with BlockingKafka(broker.bootstrap_servers, "test") as kafka:
        assert kafka.partitions(topic) == [0, 1, 2]
        with pytest.raises(KafkaUnavailableError, match="'nowhere' does not exist"):
            kafka.partitions("nowhere")
