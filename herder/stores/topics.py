"""Creation of the worker's internal topics, as Kafka Connect does at start-up."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from worker.kafka.security import PLAINTEXT_CLIENT, KafkaClientSecurity

log = logging.getLogger(__name__)

TOPIC_ALREADY_EXISTS = 36


class TopicCreationError(RuntimeError):
    """The broker refused to create an internal topic for a reason other than it existing."""


async def ensure_compacted_topics(
    bootstrap_servers: str,
    topics: Iterable[str],
    security: KafkaClientSecurity = PLAINTEXT_CLIENT,
) -> str | None:
    """Create each topic with one partition and log compaction unless it already exists.

    One partition keeps a total order of configs and statuses, which is what lets every
    worker replay them to the same state; the volume of these topics is tiny. Returns the
    Kafka cluster id, which the same admin connection can tell and `GET /` shows.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers, **security.aiokafka_options())
    await admin.start()
    try:
        wanted = [
            NewTopic(name, 1, 1, topic_configs={"cleanup.policy": "compact"}) for name in topics
        ]
        response = await admin.create_topics(wanted)
        for name, code, message in response.topic_errors:
            if code == TOPIC_ALREADY_EXISTS:
                continue
            if code != 0:
                raise TopicCreationError(f"cannot create topic {name!r}: {message} (error {code})")
            log.info("created internal topic %s", name)
        cluster = await admin.describe_cluster()
        cluster_id = cluster.get("cluster_id")
        return str(cluster_id) if cluster_id else None
    finally:
        await admin.close()
