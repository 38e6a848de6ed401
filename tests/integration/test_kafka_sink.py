"""The `sparkherd-kafka` sink's dedup against the real broker: a batch that crashed half
sent, run again, leaves each row in the topic once; a fenced writer sends nothing more."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kafka_topics import new_topic, read_topic
from worker.embedded_broker import EmbeddedBroker
from worker.kafka.client import BlockingKafka
from worker.kafka.sink import (
    CHUNK_ROWS,
    ORIGIN_HEADER,
    SEQ_HEADER,
    IntentLog,
    OutRow,
    Published,
    PublishFencedError,
    publish_batch,
)

pytestmark = pytest.mark.integration

FILES = 4
ROWS_PER_FILE = 3_000


def batch_rows(crash_after: int | None = None) -> Iterator[OutRow]:
    for n in range(FILES * ROWS_PER_FILE):
        if n == crash_after:
            raise RuntimeError("the executor died")
        origin = f"part-{n // ROWS_PER_FILE}.json"
        yield OutRow(origin, None, f'{{"n": {n}}}'.encode())


def identities(bootstrap_servers: str, topic: str) -> Counter[tuple[str, str]]:
    return Counter(
        (dict(r.headers)[ORIGIN_HEADER].decode(), dict(r.headers)[SEQ_HEADER].decode())
        for r in read_topic(bootstrap_servers, topic)
    )


def test_a_batch_run_again_after_a_crash_sends_only_what_is_missing(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "files", 3)
    intents = IntentLog(tmp_path / "intents")
    crash_after = 2 * CHUNK_ROWS + 100
    with BlockingKafka(broker.bootstrap_servers, "test") as kafka:
        publish_batch(kafka, topic, "other-sink", intents, 6, batch_rows())
        with pytest.raises(RuntimeError, match="executor died"):
            publish_batch(kafka, topic, "files-0", intents, 7, batch_rows(crash_after))
        again = publish_batch(kafka, topic, "files-0", intents, 7, batch_rows())
        assert again == Published(
            sent=FILES * ROWS_PER_FILE - 2 * CHUNK_ROWS, skipped=2 * CHUNK_ROWS
        )
        assert publish_batch(kafka, topic, "files-0", intents, 7, batch_rows()) == Published(
            sent=0, skipped=FILES * ROWS_PER_FILE
        )
    counts = identities(broker.bootstrap_servers, topic)
    assert sum(counts.values()) == 2 * FILES * ROWS_PER_FILE
    assert set(counts.values()) == {2}, "each identity once per sink"
    values = sorted(r.value or b"" for r in read_topic(broker.bootstrap_servers, topic))
    assert values == sorted(2 * [f'{{"n": {n}}}'.encode() for n in range(FILES * ROWS_PER_FILE)])

    intents.forget_before(8)
    assert not list((tmp_path / "intents").iterdir())


def test_a_fenced_writer_stops_before_its_next_chunk(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "fenced", 1)
    checks = iter([None, None, "worker b (epoch 2, generation 9)"])
    with (
        BlockingKafka(broker.bootstrap_servers, "test") as kafka,
        pytest.raises(PublishFencedError, match="worker b"),
    ):
        publish_batch(
            kafka, topic, "f-0", IntentLog(tmp_path), 0, batch_rows(), lambda: next(checks)
        )
    assert len(read_topic(broker.bootstrap_servers, topic)) == 2 * CHUNK_ROWS
