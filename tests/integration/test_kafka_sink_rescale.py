"""`tasks.max` of a Kafka sink changes under a running producer (2 -> 4 -> 1 tasks of
`kafka-to-files` on one worker and Apache Kafka): partitions move between tasks, each
taken over at the offset its old task committed, and every record lands once."""

from __future__ import annotations

from functools import partial
from operator import le
from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.file_sink import committed_records
from tests.support.kafka_topics import new_topic
from tests.support.polling import wait_until
from tests.support.processes import ready_worker
from tests.support.rest_client import Api
from tests.support.running_producer import Producer

pytestmark = pytest.mark.integration

PARTITIONS = 4


def len_written(output: Path) -> int:
    return len(committed_records(output))


@pytest.mark.parallel
def test_every_record_lands_once_while_tasks_max_goes_2_4_1(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = new_topic(broker.bootstrap_servers, "rescaled", PARTITIONS)
    output = tmp_path / "out"
    config = {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": broker.bootstrap_servers,
        "topics": topic,
        "output.path": str(output),
        "trigger.interval.ms": "300",
        "kafka.client": "jvm",
    }
    producer = Producer(broker.bootstrap_servers, topic)
    with ready_worker("rescale", broker.bootstrap_servers, tmp_path) as worker:
        api = Api(worker.url)
        producer.start()
        try:
            for tasks in (2, 4, 1):
                api.call(
                    "PUT",
                    "/connectors/rescaled/config",
                    201 if tasks == 2 else 200,
                    json={**config, "tasks.max": str(tasks)},
                )
                api.wait_states("rescaled", "RUNNING", ["RUNNING"] * tasks)
                wait_until(
                    partial(len_written, output),
                    120,
                    what=f"records sent before {tasks} tasks ran, written",
                    until=partial(le, producer.sent),
                )
        finally:
            produced = producer.finish()
        wait_until(
            partial(len_written, output),
            120,
            what="every record written",
            until=partial(le, produced),
        )
        log = worker.log_text()
    rows = committed_records(output)
    assert len({(partition, offset) for _, partition, offset in rows}) == len(rows), "duplicates"
    assert sorted(key for key, _, _ in rows) == sorted(f"key-{n}" for n in range(produced))
    assert "takes over" in log
