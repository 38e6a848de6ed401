"""The Kafka broker stopped for 30 s and started again under running sinks: every task of
`kafka-to-files`, `-delta`, `-iceberg` and `-jdbc` is RUNNING again and every record,
those written before the outage and those published after it, lands once.

Apache Kafka, not the default broker: the restarted broker must still hold the topics,
the group's config and status topics and the records (Tansu keeps them in memory).
The outage is the scenario, so its 30 s are waited out as such; every check after it
waits on a condition."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import ready_worker, running_broker
from tests.support.rest_client import Api
from tests.support.sink_set import TIMEOUT_S, SinkSet, sink_set
from worker.kafka.connection import KafkaConnection

pytestmark = [pytest.mark.integration, pytest.mark.parallel, pytest.mark.long]

OUTAGE_S = 30
RESUME_S = 600
"""How long the tasks may take to write again once the broker is back. A task whose
query was stopping when the broker went away can take minutes: Spark's JVM Kafka source
closes its AdminClient without a timeout, the close waits for the calls the outage left
pending, and each start of the task waits for the old run to stop, past
task.start.timeout.ms, until the close returns (3.5 min seen for one of four tasks)."""
PARTITIONS = 2
WAVE = 100


def leads_every_partition(sinks: SinkSet) -> bool:
    """Whether the broker answers for every partition of the sinks' topics again, so
    that one publish lands once (a retried publish could land twice)."""
    try:
        with sinks.open("test-reader") as kafka:
            return all(
                len(kafka.partitions(topic)) == PARTITIONS for topic in sinks.topics.values()
            )
    except Exception:  # not up yet: refused, timed out, no leader
        return False


def test_every_sink_task_resumes_and_writes_each_record_once_after_the_broker_restarts(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    with running_broker(tmp_path / "broker", "kafka") as broker:
        servers = broker.bootstrap_servers
        sinks = sink_set(
            "restart",
            tmp_path,
            KafkaConnection(servers),
            PARTITIONS,
            postgres=postgres,
        )
        before, after = range(WAVE), range(WAVE, 2 * WAVE)
        with ready_worker("broker-restart", servers, tmp_path) as worker:
            api = Api(worker.url, timeout_s=TIMEOUT_S)
            for sink in sinks.sinks:
                api.call(
                    "PUT", f"/connectors/{sinks.name(sink)}/config", 201, json=sinks.config(sink)
                )
            sinks.publish(before)
            sinks.wait_keys(before, "the records published before the outage")

            broker.stop()
            time.sleep(OUTAGE_S)
            broker.start()

            wait_until(lambda: leads_every_partition(sinks), TIMEOUT_S, what="the restarted broker")
            sinks.publish(after)
            sinks.wait_keys([*before, *after], "the records published after the restart", RESUME_S)
            for sink in sinks.sinks:
                api.wait_states(sinks.name(sink), "RUNNING", ["RUNNING"])
            problems = sinks.once([*before, *after])
    assert problems == dict.fromkeys(sinks.sinks), problems
