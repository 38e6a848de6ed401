"""`files-to-kafka` on real workers, a real broker and real Spark: every line of 40
files lands in the topic once, while a worker is killed mid-way and comes back, and
while a worker frozen in the middle of a transaction loses its task and wakes up."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from aiokafka import TopicPartition

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import Cluster
from tests.support.kafka_topics import new_topic, read_topic
from tests.support.polling import wait_until
from tests.support.processes import free_port, ready_worker
from tests.support.rest_client import Api
from worker.kafka.client import BlockingKafka, Record
from worker.kafka.sink import ORIGIN_HEADER

pytestmark = pytest.mark.integration

FILES = 40
LINES = 100


def drop_file(directory: Path, name: str, text: str) -> None:
    """Written beside the directory and renamed into it: a reader never sees half a file."""
    draft = directory.parent / f".{name}"
    draft.write_text(text)
    os.replace(draft, directory / name)


def drop_json_files(directory: Path, numbers: range, lines: int = LINES) -> None:
    for n in numbers:
        rows = (json.dumps({"id": n * lines + i, "file": n}) for i in range(lines))
        drop_file(directory, f"events-{n:03d}.json", "\n".join(rows) + "\n")


def published_ids(bootstrap_servers: str, topic: str) -> Counter[int]:
    """What a `read_committed` consumer sees: a transaction a worker left open or that
    was aborted is not there."""
    return Counter(
        json.loads(r.value or b"")["id"]
        for r in read_topic(bootstrap_servers, topic, "read_committed")
    )


def published_rows(bootstrap_servers: str, topic: str) -> int:
    return sum(published_ids(bootstrap_servers, topic).values())


def transaction_open(bootstrap_servers: str, topic: str) -> bool:
    """Whether records were sent to the topic that are not settled yet."""
    with (
        BlockingKafka(bootstrap_servers, "test-probe") as everything,
        BlockingKafka(bootstrap_servers, "test-probe", isolation_level="read_committed") as settled,
    ):
        partitions = [TopicPartition(topic, p) for p in everything.partitions(topic)]
        return settled.end_offsets(partitions) != everything.end_offsets(partitions)


@pytest.mark.parallel  # asserts no timing: every record once, whenever they land
def test_every_line_of_every_file_is_published_once_while_a_worker_is_killed(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "events", 3)
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    drop_json_files(incoming, range(FILES // 2))
    cluster = Cluster(
        broker.bootstrap_servers,
        tmp_path,
        size=2,
        settings=["scheduled.rebalance.max.delay.ms=3000"],
    )
    with cluster.running():
        cluster.create(
            "events",
            {
                "connector.class": "files-to-kafka",
                "tasks.max": "2",
                "input.path": str(incoming),
                "input.schema": "id LONG, file INT",
                "kafka.bootstrap.servers": broker.bootstrap_servers,
                "topic": topic,
                "key.field": "id",
                "max.files.per.trigger": "4",
                "trigger.interval.ms": "500",
            },
        )
        views = cluster.wait_converged(2)
        assert len({v.worker_id for v in views}) == 2
        wait_until(
            partial(published_rows, broker.bootstrap_servers, topic),
            120,
            what="the first files",
            until=lambda rows: rows >= 8 * LINES,
        )

        cluster.workers[1].signal(signal.SIGKILL)
        drop_json_files(incoming, range(FILES // 2, FILES))
        cluster.wait_converged(2)
        cluster.restart(1).wait_ready(120)
        cluster.wait_converged(2)
        wait_until(
            partial(published_rows, broker.bootstrap_servers, topic),
            240,
            what="every line",
            until=lambda rows: rows >= FILES * LINES,
        )

    records = read_topic(broker.bootstrap_servers, topic, "read_committed")
    ids = published_ids(broker.bootstrap_servers, topic)
    assert len(records) == FILES * LINES, f"{len(records) - FILES * LINES} duplicates"
    assert sorted(ids) == list(range(FILES * LINES))
    for record in records:
        line = json.loads(record.value or b"")
        assert record.key == str(line["id"]).encode()
        assert dict(record.headers)[ORIGIN_HEADER] == f"events-{line['file']:03d}.json".encode()


@pytest.mark.parallel
def test_csv_files_with_an_inferred_schema_and_a_missing_topic(
    each_broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """Also on Tansu, which has no transactions: the task publishes through the
    duplicate check alone (`exactly.once.support=requested`). A missing topic fails the
    task naming the keys that create it; with them, it is created with the partitions
    of the first `topic.creation` group that takes its name (KIP-158)."""
    broker = each_broker
    topic = new_topic(broker.bootstrap_servers, "prices", 1)
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    drop_file(incoming, "prices.csv", "sku,price\n" + "".join(f"s{n},{n}.5\n" for n in range(20)))
    config = {
        "connector.class": "files-to-kafka",
        "input.path": str(incoming),
        "input.format": "csv",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topic": topic,
    }
    with ready_worker("csv", broker.bootstrap_servers, tmp_path) as worker:
        api = Api(worker.url)

        def published(name: str, settings: dict[str, str]) -> list[Record]:
            """The connector's records, once its task published the 20 rows."""
            api.call("PUT", f"/connectors/{name}/config", 201, json=settings)
            api.wait_states(name, "RUNNING", ["RUNNING"])
            return wait_until(
                partial(read_topic, broker.bootstrap_servers, settings["topic"]),
                120,
                what=f"the csv rows of {name}",
                until=lambda found: len(found) >= 20,
            )

        records = published("prices", config)
        missing = {**config, "topic": "no-such-topic"}
        api.call("PUT", "/connectors/lost/config", 201, json=missing)
        status = api.wait_states("lost", "RUNNING", ["FAILED"])
        created_topic = f"wide-{free_port()}"
        created = published(
            "creating",
            {
                **config,
                "topic": created_topic,
                "topic.creation.default.partitions": "2",
                "topic.creation.default.replication.factor": "-1",
                "topic.creation.groups": "narrow, wide",
                "topic.creation.narrow.include": "narrow-.*",
                "topic.creation.narrow.partitions": "1",
                "topic.creation.wide.include": "wide-.*",
                "topic.creation.wide.partitions": "3",
            },
        )
    for found in (records, created):
        skus = sorted(json.loads(r.value or b"")["sku"] for r in found)
        assert skus == sorted(f"s{n}" for n in range(20))
    assert {r.key for r in records} == {None}
    assert json.loads(records[0].value or b"")["price"] in {f"{n}.5" for n in range(20)}
    trace = status["tasks"][0]["trace"]
    assert "'no-such-topic' does not exist" in trace
    assert "topic.creation.default.partitions and topic.creation.default.replication" in trace
    with BlockingKafka(broker.bootstrap_servers, "test-probe") as kafka:
        assert kafka.partitions(created_topic) == [0, 1, 2]


FROZEN_FILES = 8
FROZEN_LINES = 25_000
"""One transaction of 200k rows: open for seconds, long enough to freeze a worker inside it."""
SESSION_TIMEOUT_MS = 8_000


def test_a_worker_frozen_mid_transaction_is_fenced_and_every_row_lands_once(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    topic = new_topic(bootstrap, "frozen", 2)
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    drop_json_files(incoming, range(FROZEN_FILES), FROZEN_LINES)
    total = FROZEN_FILES * FROZEN_LINES
    cluster = Cluster(
        bootstrap,
        tmp_path,
        size=2,
        settings=[
            "scheduled.rebalance.max.delay.ms=3000",
            f"session.timeout.ms={SESSION_TIMEOUT_MS}",
            "heartbeat.interval.ms=1000",
        ],
    )
    with cluster.running():
        cluster.create(
            "frozen",
            {
                "connector.class": "files-to-kafka",
                "tasks.max": "1",
                "input.path": str(incoming),
                "input.schema": "id LONG, file INT",
                "kafka.bootstrap.servers": bootstrap,
                "topic": topic,
                "exactly.once.support": "required",
                "max.files.per.trigger": str(FROZEN_FILES),
                "trigger.interval.ms": "500",
            },
        )
        [view] = cluster.wait_converged(1)
        zombie = next(w for w in cluster.workers if w.url == f"http://{view.worker_id}")

        def frozen_mid_transaction() -> bool:
            if not transaction_open(bootstrap, topic):
                return False
            zombie.signal_every_process(signal.SIGSTOP)
            if transaction_open(bootstrap, topic):
                return True
            zombie.signal_every_process(signal.SIGCONT)  # froze between two transactions: again
            return False

        wait_until(frozen_mid_transaction, 180, interval_s=0.05, what="a transaction to freeze in")
        frozen_at = time.monotonic()
        wait_until(
            partial(cluster.converged, 1),
            120,
            what="the frozen worker's task to move",
            until=lambda views: views[0].worker_id != view.worker_id,
        )
        wait_until(
            partial(published_rows, bootstrap, topic),
            240,
            what="the new owner to publish every row",
            until=lambda rows: rows >= total,
        )
        print(
            "every row committed by the new owner "
            f"{time.monotonic() - frozen_at:.1f} s after the freeze"
        )

        seen_by_zombie = len(zombie.log_text())
        zombie.signal_every_process(signal.SIGCONT)
        wait_until(
            lambda: (
                "fenced" in zombie.log_text()[seen_by_zombie:]
                or "lost group membership" in zombie.log_text()[seen_by_zombie:]
            ),
            60,
            what="the zombie to stop",
        )
        cluster.wait_converged(1)
        settled_ids = published_ids(bootstrap, topic)

    aborted = len(read_topic(bootstrap, topic)) - total
    print(f"records the zombie sent and never committed: {aborted}")
    assert aborted > 0, "the zombie's open transaction was not in the log"
    assert sorted(settled_ids) == list(range(total))
    assert set(settled_ids.values()) == {1}, "a row published twice"
