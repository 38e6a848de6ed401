"""A task's dead letter queue: its topic made sure of when the task starts, and each
batch's failed records published to it once, also when the batch runs again.

Publishing reuses the Kafka sink's exactly-once machinery (`worker.kafka.sink`) from the
driver, where the batch's failed records are collected (they are few): each record's
identity is where it was read (`FailedRecord.origin`, topic/partition/offset, the same
every time its batch runs), the batch's intent file records the topic's end offsets
before anything is sent, and a batch that finds its intent there sends only what is not
yet in the topic. On a broker with transactions, the records of a batch are one
transaction of a producer whose id belongs to the task's checkpoint, and every start of
the task fences the producer of the start before it (`worker.kafka.transactions`).

`errors.retry.timeout` retries a publish that failed for a reason that may pass (the
broker unreachable, a leader moving: `KafkaUnavailableError`) with exponential backoff
from 300 ms up to `errors.retry.delay.max.ms`, as Connect's `RetryWithToleranceOperator`
does; a fenced producer or an overtaken claim is never retried. A publish that still
fails fails the batch: files are never committed without their batch's failed records
being in the dead letter queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from aiokafka.errors import KafkaError

from worker.kafka.client import KafkaUnavailableError, ProducerFencedError
from worker.kafka.connection import KafkaConnection
from worker.kafka.sink import (
    TRANSACTION_TIMEOUT_MS,
    IntentLog,
    OutRow,
    PublishFencedError,
    publish_batch,
)
from worker.kafka.topic_creation import NewTopicSpec
from worker.kafka.transactions import TransactionalIds, fence_earlier_producers
from worker.plugins.api import TaskContext
from worker.records.errors.failed_records import FailedRecord, dead_letter_headers
from worker.records.errors.settings import DLQ_REPLICATION_FACTOR_KEY, ErrorHandlingSettings

log = logging.getLogger(__name__)

INTENTS_DIR: Final = "dlq-intents"
"""Under the task's checkpoint: the intents and transactional ids of its DLQ publishing."""
DLQ_PARTITIONS: Final = 1
"""Connect creates a dead letter queue topic with one partition."""
RETRY_DELAY_MIN_MS: Final = 300
"""Connect's first backoff between two attempts."""


class DeadLetterQueueMissingError(KafkaUnavailableError):
    """The dead letter queue topic does not exist and may not be created here."""


@dataclass(frozen=True)
class PublishCounts:
    """What one batch's publishing did, in Connect's metric meanings."""

    requests: int
    """Records handed to the topic, counted once per attempt."""
    failures: int
    """Records of the attempts that failed."""


def backoff_ms(attempt: int, max_delay_ms: int) -> int:
    """The wait after the `attempt`-th failed attempt (1-based): doubling, capped."""
    doubled: int = RETRY_DELAY_MIN_MS << min(attempt - 1, 30)
    return min(max_delay_ms, doubled)


class DeadLetterQueue:
    """One task's dead letter queue; made at task start by `open`."""

    def __init__(
        self,
        connection: KafkaConnection,
        topic: str,
        context: TaskContext,
        settings: ErrorHandlingSettings,
        transactional_prefix: str | None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._connection = connection
        self.topic = topic
        self._context = context
        self._settings = settings
        self._prefix = transactional_prefix
        self._progress = context.checkpoint_dir / INTENTS_DIR
        self._sleep = sleep

    @classmethod
    def open(
        cls, connection: KafkaConnection, settings: ErrorHandlingSettings, context: TaskContext
    ) -> DeadLetterQueue | None:
        """The task's dead letter queue, its topic created when missing (one partition,
        `errors.deadletterqueue.topic.replication.factor`) if the worker's
        `topic.creation.enable` allows; and every producer an earlier start of the task
        published it with fenced. None when the connector names none."""
        topic = settings.dead_letter_queue
        if topic is None:
            return None
        with connection.open("sparkherd-dead-letter-queue") as kafka:
            if not kafka.topic_exists(topic):
                if not context.topic_creation_enabled:
                    raise DeadLetterQueueMissingError(
                        f"The dead letter queue topic {topic!r} does not exist on "
                        f"{connection.bootstrap_servers}, and this worker's "
                        "topic.creation.enable=false forbids creating it: create it, or "
                        "name an existing topic in errors.deadletterqueue.topic.name"
                    )
                spec = NewTopicSpec(
                    topic,
                    DLQ_PARTITIONS,
                    settings.errors_deadletterqueue_topic_replication_factor,
                    origin=DLQ_REPLICATION_FACTOR_KEY,
                )
                if kafka.ensure_topic(spec):
                    log.info("Created the dead letter queue topic %s: %s", topic, spec.describe())
        ids = TransactionalIds(context.checkpoint_dir / INTENTS_DIR)
        prefix = ids.prefix(f"{context.query_name}-dlq")
        transactional = fence_earlier_producers(
            connection, ids.used(prefix), TRANSACTION_TIMEOUT_MS, "requested"
        )
        return cls(connection, topic, context, settings, prefix if transactional else None)

    def publish(self, batch_id: int, records: Sequence[FailedRecord]) -> PublishCounts:
        """Publish `records` once (see the module docstring), retrying as
        `errors.retry.timeout` allows; raises when they could not all be published."""
        intents = IntentLog(self._progress)
        intents.forget_before(batch_id)
        context = self._context.connector, self._context.task
        enabled = self._settings.errors_deadletterqueue_context_headers_enable
        rows = [
            OutRow(r.origin, r.key, r.value, dead_letter_headers(r, *context, context=enabled))
            for r in records
        ]
        deadline = time.monotonic() + self._settings.errors_retry_timeout / 1000
        requests = failures = attempt = 0
        while True:
            attempt += 1
            requests += len(rows)
            try:
                self._publish_once(intents, batch_id, rows)
                return PublishCounts(requests, failures)
            except (ProducerFencedError, PublishFencedError):
                raise
            except (KafkaUnavailableError, KafkaError, OSError) as exc:
                failures += len(rows)
                wait_s = backoff_ms(attempt, self._settings.errors_retry_delay_max_ms) / 1000
                if time.monotonic() + wait_s > deadline:
                    raise DeadLetterQueuePublishError(
                        f"Could not publish {len(rows)} failed records of batch {batch_id} "
                        f"to the dead letter queue {self.topic!r} ({attempt} attempts, "
                        f"errors.retry.timeout={self._settings.errors_retry_timeout}): {exc}",
                        PublishCounts(requests, failures),
                    ) from exc
                log.warning("Retrying the dead letter queue publish in %.1f s: %s", wait_s, exc)
                self._sleep(wait_s)

    def _publish_once(self, intents: IntentLog, batch_id: int, rows: Sequence[OutRow]) -> None:
        claim = self._context.claim
        transactional = self._prefix is not None
        with self._connection.open(
            f"sparkherd-{self._context.query_name}-dlq",
            "read_committed" if transactional else "read_uncommitted",
        ) as kafka:
            if self._prefix is not None:
                ids = TransactionalIds(self._progress)
                kafka.start_transactions(ids.for_partition(self._prefix, 0), TRANSACTION_TIMEOUT_MS)
            publish_batch(
                kafka,
                self.topic,
                f"{self._context.query_name}-dlq",
                intents,
                batch_id,
                rows,
                claim.fenced_by if claim is not None else lambda: None,
                transactional=transactional,
            )


def _sendable(record: FailedRecord) -> bytes | None:
    """The value to send: the original, except that a record with neither key nor value
    is sent with an empty value, since the producer (aiokafka) refuses to send nothing."""
    return b"" if record.key is None and record.value is None else record.value


class DeadLetterQueuePublishError(KafkaUnavailableError):
    """A batch's failed records could not all be published, retries included."""

    def __init__(self, message: str, counts: PublishCounts) -> None:
        super().__init__(message)
        self.counts = counts
