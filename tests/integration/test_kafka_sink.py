"""The `sparkherd-kafka` sink against real brokers: a batch that crashed half sent, run
again, leaves each row in the topic once; a fenced writer sends nothing more; in a
transaction, a zombie's open transaction is aborted by the new producer of its id and
the zombie cannot send again; a broker without transactions is told apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.kafka_topics import new_topic, read_topic
from worker.kafka.client import BlockingKafka, IsolationLevel, TransactionsUnsupportedError
from worker.kafka.connection import KafkaConnection
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
from worker.kafka.transactions import fence_earlier_producers

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

FILES = 4
ROWS_PER_FILE = 3_000


def batch_rows(crash_after: int | None = None) -> Iterator[OutRow]:
    for n in range(FILES * ROWS_PER_FILE):
        if n == crash_after:
            raise RuntimeError("the executor died")
        origin = f"part-{n // ROWS_PER_FILE}.json"
        yield OutRow(origin, None, f'{{"n": {n}}}'.encode())


def identities(
    bootstrap_servers: str, topic: str, isolation_level: IsolationLevel = "read_uncommitted"
) -> Counter[tuple[str, str]]:
    return Counter(
        (dict(r.headers)[ORIGIN_HEADER].decode(), dict(r.headers)[SEQ_HEADER].decode())
        for r in read_topic(bootstrap_servers, topic, isolation_level)
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


def test_rows_routed_to_their_own_topics_are_sent_once_when_the_batch_runs_again(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """jdbc-to-kafka's case: one batch, a topic per table; the intent covers both."""
    topics = [new_topic(broker.bootstrap_servers, "table", 1) for _ in range(2)]
    total = CHUNK_ROWS + 1_000

    def routed_rows(crash_after: int | None = None) -> Iterator[OutRow]:
        for n in range(total):
            if n == crash_after:
                raise RuntimeError("the executor died")
            table = n % 2
            yield OutRow(f"table-{table}", None, str(n).encode(), topic=topics[table])

    intents = IntentLog(tmp_path / "intents")
    with BlockingKafka(broker.bootstrap_servers, "test") as kafka:
        with pytest.raises(RuntimeError, match="executor died"):
            publish_batch(
                kafka, topics[0], "jdbc-0", intents, 3, routed_rows(CHUNK_ROWS + 10), routed=topics
            )
        again = publish_batch(kafka, topics[0], "jdbc-0", intents, 3, routed_rows(), routed=topics)
    assert again == Published(sent=total - CHUNK_ROWS, skipped=CHUNK_ROWS)
    for table, topic in enumerate(topics):
        values = sorted(int(r.value or b"") for r in read_topic(broker.bootstrap_servers, topic))
        assert values == list(range(table, total, 2))


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


def test_a_zombies_open_transaction_is_aborted_and_the_zombie_fenced(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """The zombie sent two chunks in a transaction and stalled; the task's new owner
    starts a producer of the same id, runs the batch again and commits; the zombie
    wakes and its next chunk is refused. Read committed, every row is there once."""
    bootstrap = broker.bootstrap_servers
    topic = new_topic(bootstrap, "tx", 3)
    intents = IntentLog(tmp_path / "intents")
    rows = FILES * ROWS_PER_FILE
    owner_published: list[Published] = []
    with (
        BlockingKafka(bootstrap, "zombie", isolation_level="read_committed") as zombie,
        BlockingKafka(bootstrap, "owner", isolation_level="read_committed") as owner,
    ):
        zombie.start_transactions("files-0-p0", 60_000)

        def stalled_rows() -> Iterator[OutRow]:
            for n, row in enumerate(batch_rows()):
                if n == 2 * CHUNK_ROWS + 1:
                    owner.start_transactions("files-0-p0", 60_000)
                    owner_published.append(
                        publish_batch(
                            owner, topic, "files-0", intents, 3, batch_rows(), transactional=True
                        )
                    )
                yield row

        with pytest.raises(PublishFencedError, match="fenced this producer"):
            publish_batch(zombie, topic, "files-0", intents, 3, stalled_rows(), transactional=True)
        assert owner_published == [Published(sent=rows, skipped=0)]
        assert publish_batch(
            owner, topic, "files-0", intents, 3, batch_rows(), transactional=True
        ) == Published(sent=0, skipped=rows), "a committed batch run again sends nothing"

    committed = identities(bootstrap, topic, "read_committed")
    assert len(committed) == rows and set(committed.values()) == {1}
    everything = read_topic(bootstrap, topic)
    assert len(everything) == rows + 2 * CHUNK_ROWS, "the zombie's two chunks, aborted"


def test_transactions_are_told_apart_from_a_broker_without_them(
    kafka_broker: EmbeddedBroker, tansu_broker: EmbeddedBroker
) -> None:
    ids = ["probe-0", "probe-1"]
    kafka = KafkaConnection(kafka_broker.bootstrap_servers)
    assert fence_earlier_producers(kafka, ids, 60_000, "required") is True
    tansu = KafkaConnection(tansu_broker.bootstrap_servers)
    assert fence_earlier_producers(tansu, ids, 60_000, "requested") is False
    with pytest.raises(TransactionsUnsupportedError, match=r"exactly\.once\.support=required"):
        fence_earlier_producers(tansu, ids, 60_000, "required")
