"""The `sparkherd-kafka` sink with topics a transform makes per record (a TimestampRouter's
dated topic, known only when the row comes): rows go to them with the headers the chain
wrote (one without a value among them), and a batch that crashed half sent, run again,
leaves each row there once, though the batch's intent could not name the topic before it
ran."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.kafka_topics import new_topic, read_topic
from worker.kafka.client import BlockingKafka
from worker.kafka.sink import CHUNK_ROWS, IntentLog, OutRow, Published, publish_batch

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


def test_rows_routed_per_record_are_sent_once_when_the_batch_runs_again(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    declared = new_topic(broker.bootstrap_servers, "declared", 1)
    dated = [new_topic(broker.bootstrap_servers, f"events-2024010{day}", 1) for day in (1, 2)]
    total = CHUNK_ROWS + 1_000

    def rows(crash_after: int | None = None) -> Iterator[OutRow]:
        for n in range(total):
            if n == crash_after:
                raise RuntimeError("the executor died")
            headers = (("n", str(n).encode()), ("empty", None))
            yield OutRow("file.json", None, str(n).encode(), headers, topic=dated[n % 2])

    intents = IntentLog(tmp_path / "intents")
    with BlockingKafka(broker.bootstrap_servers, "test") as kafka:
        with pytest.raises(RuntimeError, match="executor died"):
            publish_batch(
                kafka, declared, "files-0", intents, 5, rows(CHUNK_ROWS + 10), routed=[declared]
            )
        again = publish_batch(kafka, declared, "files-0", intents, 5, rows(), routed=[declared])
    assert again == Published(sent=total - CHUNK_ROWS, skipped=CHUNK_ROWS)
    assert read_topic(broker.bootstrap_servers, declared) == []
    for day, topic in enumerate(dated):
        found = read_topic(broker.bootstrap_servers, topic)
        assert sorted(int(r.value or b"") for r in found) == list(range(day, total, 2))
        # The test's client reads a header without a value as empty bytes.
        assert all(r.headers[:2] == (("n", r.value), ("empty", b"")) for r in found)
