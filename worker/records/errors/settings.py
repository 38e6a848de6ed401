"""Connect's `errors.*` keys (KIP-298) as settings of a connector that reads Kafka.

Keys, defaults and meanings are Connect's, with two choices of our own, both 400s rather
than surprises: an `errors.*` key Connect does not define is refused (a typo such as
`errors.deadletterqueue.topic` would otherwise silently send nothing anywhere), and
`errors.retry.timeout=-1` (Connect's "retry forever") is refused, since a batch would
wait on an unreachable dead letter queue forever with its task RUNNING.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Final, Literal

from pydantic import BaseModel, Field, field_validator

from worker.kafka.topic_creation import BROKER_DEFAULT, MAX_REPLICATION_FACTOR
from worker.plugins.api import JAVA_INT_MAX, ConfigProblem
from worker.plugins.config_values import KAFKA_NAME_RULE, is_kafka_name

PREFIX: Final = "errors."
TOLERANCE_KEY: Final = "errors.tolerance"
DLQ_PREFIX: Final = "errors.deadletterqueue."
DLQ_TOPIC_KEY: Final = "errors.deadletterqueue.topic.name"
DLQ_REPLICATION_FACTOR_KEY: Final = "errors.deadletterqueue.topic.replication.factor"
DLQ_HEADERS_KEY: Final = "errors.deadletterqueue.context.headers.enable"
LOG_ENABLE_KEY: Final = "errors.log.enable"
LOG_MESSAGES_KEY: Final = "errors.log.include.messages"
RETRY_TIMEOUT_KEY: Final = "errors.retry.timeout"
RETRY_DELAY_MAX_KEY: Final = "errors.retry.delay.max.ms"
KEYS: Final = frozenset(
    {
        TOLERANCE_KEY,
        DLQ_TOPIC_KEY,
        DLQ_REPLICATION_FACTOR_KEY,
        DLQ_HEADERS_KEY,
        LOG_ENABLE_KEY,
        LOG_MESSAGES_KEY,
        RETRY_TIMEOUT_KEY,
        RETRY_DELAY_MAX_KEY,
    }
)


class ErrorHandlingSettings(BaseModel):
    """The `errors.*` keys of a connector that reads Kafka (a sink, in Connect's terms)."""

    errors_tolerance: Literal["none", "all"] = Field(
        default="none",
        alias=TOLERANCE_KEY,
        description="none: a record that fails conversion or transform.sql fails the task; "
        "all: it is skipped (and sent to the dead letter queue, if one is named)",
    )
    errors_deadletterqueue_topic_name: str = Field(
        default="",
        alias=DLQ_TOPIC_KEY,
        description="the topic failed records go to with errors.tolerance=all; empty: none",
    )
    errors_deadletterqueue_topic_replication_factor: int = Field(
        default=3,
        alias=DLQ_REPLICATION_FACTOR_KEY,
        description="the replication factor the dead letter queue topic is created with "
        "when missing (-1: the broker's default)",
    )
    errors_deadletterqueue_context_headers_enable: bool = Field(
        default=False,
        alias=DLQ_HEADERS_KEY,
        description="add Connect's __connect.errors.* headers saying where and why",
    )
    errors_log_enable: bool = Field(
        default=False, alias=LOG_ENABLE_KEY, description="log each failed record's error"
    )
    errors_log_include_messages: bool = Field(
        default=False,
        alias=LOG_MESSAGES_KEY,
        description="include the record's key and value in that log line",
    )
    errors_retry_timeout: int = Field(
        default=0,
        alias=RETRY_TIMEOUT_KEY,
        ge=0,
        le=JAVA_INT_MAX,
        description="ms to keep retrying a retriable failure (a dead letter queue "
        "produce); 0: no retry",
    )
    errors_retry_delay_max_ms: int = Field(
        default=60_000,
        alias=RETRY_DELAY_MAX_KEY,
        ge=0,
        le=JAVA_INT_MAX,
        description="the longest wait between two retries",
    )

    @field_validator("errors_tolerance", mode="before")
    @classmethod
    def _case_insensitive(cls, value: object) -> object:
        """Connect matches `none` and `all` case-insensitively."""
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("errors_deadletterqueue_topic_name", mode="before")
    @classmethod
    def _stripped(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @field_validator("errors_deadletterqueue_topic_replication_factor")
    @classmethod
    def _replication_factor(cls, value: int) -> int:
        if value != BROKER_DEFAULT and not 1 <= value <= MAX_REPLICATION_FACTOR:
            raise ValueError(f"-1 (the broker's default) or 1 to {MAX_REPLICATION_FACTOR}")
        return value

    @property
    def dead_letter_queue(self) -> str | None:
        """The topic failed records go to, if any (only with `errors.tolerance=all`)."""
        if self.errors_tolerance != "all":
            return None
        return self.errors_deadletterqueue_topic_name or None


def error_handling_problems(
    config: Mapping[str, str], source_topics: Container[str]
) -> list[ConfigProblem]:
    """What the model cannot judge alone: unknown `errors.*` keys, and a dead letter
    queue that is no topic name or is one of the topics read (each failed record would
    be read again, fail again and be sent again, forever)."""
    problems = [
        ConfigProblem(key, f"not one of Connect's error handling keys: {', '.join(sorted(KEYS))}")
        for key in sorted(config)
        if key.startswith(PREFIX) and key not in KEYS
    ]
    topic = config.get(DLQ_TOPIC_KEY, "").strip()
    if topic and not is_kafka_name(topic):
        problems.append(ConfigProblem(DLQ_TOPIC_KEY, f"not a Kafka topic name: {KAFKA_NAME_RULE}"))
    elif topic and topic in source_topics:
        problems.append(
            ConfigProblem(
                DLQ_TOPIC_KEY,
                f"{topic!r} is a topic this connector reads: its failed records would be "
                "read again, fail again and be sent again, forever",
            )
        )
    return problems


def not_reading_kafka_problems(config: Mapping[str, str], connector: str) -> list[ConfigProblem]:
    """For a connector that reads no Kafka records: its `errors.*` keys name a problem
    rather than being ignored, since no record of it could ever reach a dead letter
    queue, and `errors.tolerance=all` would promise a tolerance nothing gives."""
    return [
        ConfigProblem(
            key,
            f"{connector} reads no Kafka records, so none can fail conversion or "
            "transform.sql or go to a dead letter queue: remove the key",
        )
        for key in sorted(config)
        if key.startswith(DLQ_PREFIX)
        or (key == TOLERANCE_KEY and config[key].strip().lower() != "none")
    ]
