"""A record that failed, as the dead letter queue and the log see it: its original
bytes and headers, where it was read, and which stage failed with what.

The context headers are Connect's (`DeadLetterQueueReporter`, KIP-298), values as UTF-8
strings, after the record's own headers, so tools written for Connect's dead letter
queues read ours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

HEADER_PREFIX: Final = "__connect.errors."
TOPIC_HEADER: Final = f"{HEADER_PREFIX}topic"
PARTITION_HEADER: Final = f"{HEADER_PREFIX}partition"
OFFSET_HEADER: Final = f"{HEADER_PREFIX}offset"
CONNECTOR_HEADER: Final = f"{HEADER_PREFIX}connector.name"
TASK_HEADER: Final = f"{HEADER_PREFIX}task.id"
STAGE_HEADER: Final = f"{HEADER_PREFIX}stage"
CLASS_HEADER: Final = f"{HEADER_PREFIX}class.name"
EXCEPTION_CLASS_HEADER: Final = f"{HEADER_PREFIX}exception.class.name"
EXCEPTION_MESSAGE_HEADER: Final = f"{HEADER_PREFIX}exception.message"
EXCEPTION_STACKTRACE_HEADER: Final = f"{HEADER_PREFIX}exception.stacktrace"

Headers = tuple[tuple[str, bytes], ...]
Stage = Literal["KEY_CONVERTER", "VALUE_CONVERTER", "TRANSFORMATION", "TASK_PUT"]
"""Connect's names of the stages a record can fail in here (`TASK_PUT`: the sink's write,
which Connect's sinks report through its errant record reporter)."""
CONVERSION_EXCEPTION: Final = "org.apache.kafka.connect.errors.DataException"
"""What Connect's converters throw for bytes they cannot read, named for the same
failure so that filters written for Connect's dead letter queues match."""
TRANSFORM_CLASS: Final = "transform.sql"
"""The `class.name` of a `transform.sql` failure: the setting whose query failed (Connect
names the transformation's class)."""


@dataclass(frozen=True)
class FailedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    """The original bytes, before any converter."""
    value: bytes | None
    headers: Headers
    """The original headers (empty when the source did not read them)."""
    stage: Stage
    class_name: str
    """The converter's class, or `TRANSFORM_CLASS`."""
    exception_class: str
    message: str
    stacktrace: str | None = None
    read_from: str | None = None
    """The topic it was read from, when a transform routed it to `topic` since."""

    @property
    def source_topic(self) -> str:
        return self.read_from or self.topic

    @property
    def origin(self) -> str:
        """The record's identity for the dead letter queue's duplicate check: where it
        was read, which is the same every time its batch runs."""
        return f"{self.topic}/{self.partition}/{self.offset}"

    def where(self) -> str:
        return f"topic {self.source_topic}, partition {self.partition}, offset {self.offset}"


@dataclass(frozen=True)
class PutFailure:
    """A converted record that the sink itself could not write (a database refused its
    row), named by where it was read; the sink finds which records these are."""

    topic: str
    partition: int
    offset: int
    exception_class: str
    message: str
    """What the sink says went wrong, naming where it wrote (the table)."""

    def where(self) -> str:
        return f"topic {self.topic}, partition {self.partition}, offset {self.offset}"


PutFailed = Callable[[int, str, Sequence[PutFailure]], None]
"""How a sink hands over the records of a batch (by id) it could not write, with the
sink's class name (`class.name` in the dead letter queue): before it commits the rest, in
the batch's `foreachBatch` call. Under `errors.tolerance=none` this raises naming the
first record; under `all` the records go where the batch's other failed records go."""


def context_headers(record: FailedRecord, connector: str, task: int) -> Headers:
    """Connect's `__connect.errors.*` headers for `record`, in Connect's order."""
    pairs = [
        (TOPIC_HEADER, record.source_topic),
        (PARTITION_HEADER, str(record.partition)),
        (OFFSET_HEADER, str(record.offset)),
        (CONNECTOR_HEADER, connector),
        (TASK_HEADER, str(task)),
        (STAGE_HEADER, record.stage),
        (CLASS_HEADER, record.class_name),
        (EXCEPTION_CLASS_HEADER, record.exception_class),
        (EXCEPTION_MESSAGE_HEADER, record.message),
    ]
    if record.stacktrace is not None:
        pairs.append((EXCEPTION_STACKTRACE_HEADER, record.stacktrace))
    return tuple((name, text.encode()) for name, text in pairs)


def dead_letter_headers(
    record: FailedRecord, connector: str, task: int, *, context: bool
) -> Headers:
    """The record's own headers, then, when `context`, Connect's context headers."""
    added = context_headers(record, connector, task) if context else ()
    return record.headers + added


def log_line(record: FailedRecord, connector: str, task: int, *, include_messages: bool) -> str:
    """`errors.log.enable`'s line for one record: where and why, and its key and value
    only when `errors.log.include.messages` asks (record content stays out of logs by
    default, as in Connect)."""
    line = (
        f"Error in task {connector}-{task}, stage {record.stage} ({record.class_name}), "
        f"record at {record.where()}: {record.exception_class}: {record.message}"
    )
    if include_messages:
        line += f"; key={record.key!r}, value={record.value!r}"
    return line
