"""The transactional ids of one task's Kafka sink, kept in its checkpoint.

Spark writes each partition of a batch in its own Python worker, and a Kafka producer
holds one transaction at a time, so a task publishes through one transactional id per
Spark partition: `<prefix>-<partition>`. The prefix names the task and carries a token
made once per checkpoint, so two clusters on one Kafka never share an id, while every
start of the task, on any worker, uses the same ids: that is what lets a start fence the
producers of the start before it.

Every writer records its partition under `producers/` before it starts its producer; a
start of the task starts a producer for each recorded id (`fence_earlier_producers`),
which aborts whatever a zombie of the task left open and fences it for good, before the
task's query runs a batch again.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from worker.kafka.client import TransactionsUnsupportedError
from worker.kafka.connection import KafkaConnection

log = logging.getLogger(__name__)

PREFIX_FILE: Final = "transactional-id"
PRODUCERS_DIR: Final = "producers"
ExactlyOnceSupport = Literal["requested", "required"]


@dataclass(frozen=True)
class TransactionalIds:
    """`<progress.dir>/transactional-id` and `<progress.dir>/producers/<partition>`."""

    directory: Path

    def prefix(self, task_name: str) -> str:
        """The id prefix of this checkpoint, made by whichever start comes first."""
        path = self.directory / PREFIX_FILE
        if not path.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            draft = self.directory / f".{PREFIX_FILE}.{secrets.token_hex(8)}"
            draft.write_text(f"sparkherd-{task_name}-{secrets.token_hex(4)}")
            try:
                os.link(draft, path)
            except FileExistsError:
                pass
            finally:
                draft.unlink()
        return path.read_text().strip()

    def for_partition(self, prefix: str, partition: int) -> str:
        """The id of a Spark partition's writer, recorded before the writer uses it."""
        producers = self.directory / PRODUCERS_DIR
        producers.mkdir(parents=True, exist_ok=True)
        (producers / str(partition)).touch()
        return f"{prefix}-{partition}"

    def used(self, prefix: str) -> list[str]:
        """Every id a writer of this checkpoint has started a producer with (and the
        first one, which a start uses to learn whether the broker has transactions)."""
        recorded = {
            int(path.name)
            for path in (self.directory / PRODUCERS_DIR).glob("*")
            if path.name.isdigit()
        }
        return [f"{prefix}-{partition}" for partition in sorted({0, *recorded})]


def fence_earlier_producers(
    connection: KafkaConnection,
    ids: Iterable[str],
    timeout_ms: int,
    support: ExactlyOnceSupport,
) -> bool:
    """Start a producer for each id, which fences every earlier one; whether the broker
    offers transactions. A broker without them is an error only when they are required."""
    try:
        with connection.open("sparkherd-fencing") as kafka:
            for transactional_id in ids:
                kafka.start_transactions(transactional_id, timeout_ms)
    except TransactionsUnsupportedError as exc:
        if support == "required":
            raise TransactionsUnsupportedError(
                f"exactly.once.support=required, but {exc}: use a broker with "
                "transactions (Apache Kafka), or exactly.once.support=requested to publish "
                "through sparkherd's own duplicate check"
            ) from exc
        log.warning("%s: each row is published once through the duplicate check instead", exc)
        return False
    return True
