"""The I/O edge of topic creation: a source task makes sure the topic it writes exists
before it starts, creating it when its connector's rules and its worker allow
(`worker.kafka.topic_creation` decides; `BlockingKafka.ensure_topic` creates).

At task start rather than at connector creation, as Connect creates a topic at a task's
first send: the cluster may be another than the worker's, and a topic deleted while the
connector was stopped is created again at its next start.
"""

from __future__ import annotations

import logging

from worker.kafka.client import BlockingKafka, KafkaUnavailableError
from worker.kafka.topic_creation import TopicCreation, missing_topic_message

log = logging.getLogger(__name__)


def ensure_source_topic(
    kafka: BlockingKafka,
    servers: str,
    topic: str,
    creation: TopicCreation | None,
    *,
    worker_enabled: bool,
) -> None:
    """Return once `topic` exists. A missing topic is created by the first group of
    `creation` that takes it, if `worker_enabled`; otherwise the task fails with a
    message naming the keys that would have created it."""
    if kafka.topic_exists(topic):
        return
    if creation is None or not worker_enabled:
        raise KafkaUnavailableError(
            missing_topic_message(topic, servers, worker_enabled=worker_enabled)
        )
    spec = creation.new_topic(topic)
    if kafka.ensure_topic(spec):
        shown = spec.describe(values=False)
        log.info("Created topic %s on %s: %s (%s)", topic, servers, shown, spec.origin)
    else:
        log.info("Kafka topic %s was created on %s by another client meanwhile", topic, servers)
