"""A cluster on Apache Kafka secured as users secure it: SCRAM-SHA-512 over TLS, with
Kafka Connect's worker keys. Every client the worker opens logs in: membership, the
config and status topics, and a connector's reads inside Spark, through the Python
Kafka source and the JVM one, into files, Delta, Iceberg and PostgreSQL, and the dead
letter queue's writes. A wrong password or an untrusted certificate stops the worker
with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka import TopicPartition

from tests.support.cluster import Cluster
from tests.support.file_sink import committed_files
from tests.support.kafka_topics import create_topic, keyed
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import free_port
from tests.support.secured_kafka import WORKER, client_settings, make_authority, secured_kafka
from tests.support.sink_set import TIMEOUT_S, SinkSet, sink_set
from worker.kafka.client import Outgoing, Record
from worker.kafka.connection import KafkaConnection
from worker.kafka.security import SECURITY_KEYS

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

RECORDS = 500


def worker_exit(
    bootstrap: str, settings: list[str], root: Path
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sparkherd.cli", "worker"]
    for setting in [
        f"bootstrap.servers={bootstrap}",
        f"rest.port={free_port()}",
        f"checkpoint.root={root}",
        *settings,
    ]:
        command += ["--set", setting]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def assert_one_clear_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("sparkherd: "), result.stderr
    for word in words:
        assert word in last, last


def test_a_cluster_runs_every_sink_and_the_dlq_on_scram_over_tls_and_refuses_bad_logins(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    with secured_kafka(tmp_path / "broker") as (broker, authority):
        settings = client_settings(authority.ca)
        wrong_password = client_settings(authority.ca, (WORKER[0], "not-the-password"))
        assert_one_clear_line(
            worker_exit(broker.bootstrap_servers, wrong_password, tmp_path / "a"),
            "authentication",
        )
        stranger = make_authority(tmp_path / "other-ca", "other-ca")
        assert_one_clear_line(
            worker_exit(broker.bootstrap_servers, client_settings(stranger.ca), tmp_path / "b"),
            "certificate",
        )

        given = dict(setting.split("=", 1) for setting in settings)
        connection = KafkaConnection(
            broker.bootstrap_servers,
            tuple((k, v) for k, v in given.items() if k in SECURITY_KEYS),
        )
        topic = f"secured-{free_port()}"
        create_topic(broker.bootstrap_servers, topic, 2, connection.security())
        with connection.open("test-producer") as kafka:
            kafka.publish(topic, keyed(range(RECORDS)))

        output = tmp_path / "out"
        cluster = Cluster(broker.bootstrap_servers, tmp_path / "cluster", size=2, settings=settings)
        with cluster.running():
            cluster.create(
                "secured",
                {
                    "connector.class": "kafka-to-files",
                    "tasks.max": "2",
                    "kafka.bootstrap.servers": broker.bootstrap_servers,
                    "kafka.client": "python",
                    "topics": topic,
                    "output.path": str(output),
                    "output.format": "json",
                },
            )
            wait_until(
                lambda: len(written_keys(output)) >= RECORDS, 180, what="every record written"
            )
            assert sorted(written_keys(output)) == sorted(f"key-{n}" for n in range(RECORDS))
            sinks, dlq = jvm_sinks_with_a_dlq(connection, cluster, tmp_path / "sinks", postgres)
            sinks.wait_keys(range(RECORDS), "every record, through the JVM Kafka source")
            letters = wait_until(
                lambda: dead_letters(connection, dlq), TIMEOUT_S, what="the dead letter", until=bool
            )
            problems = sinks.once(range(RECORDS))
    assert problems == dict.fromkeys(sinks.sinks), problems
    assert [letter.key for letter in letters] == [POISON.key]


POISON = Outgoing(b"poison", b"{not json")
"""A record kafka-to-jdbc's JSON converter fails: it goes to the dead letter queue."""


def dead_letters(connection: KafkaConnection, dlq: str) -> list[Record]:
    """Every committed record of the dead letter queue; none before it exists."""
    try:
        with connection.open("test-reader", "read_committed") as kafka:
            partitions = [TopicPartition(dlq, p) for p in kafka.partitions(dlq)]
            ends = kafka.end_offsets(partitions)
            return [r for tp in partitions for c in kafka.fetch(tp, 0, ends[tp]) for r in c]
    except Exception:  # the topic is created with the first dead letter
        return []


def jvm_sinks_with_a_dlq(
    connection: KafkaConnection, cluster: Cluster, root: Path, postgres: PostgresServer
) -> tuple[SinkSet, str]:
    """kafka-to-files, -delta, -iceberg and -jdbc reading through the JVM Kafka source,
    kafka-to-jdbc with a dead letter queue, each with `RECORDS` records and kafka-to-jdbc
    a poison pill besides; they take the worker's security settings as their own."""
    sinks = sink_set(
        "secured", root, connection, 2, postgres=postgres, common={"kafka.client": "jvm"}
    )
    dlq = f"secured-dlq-{free_port()}"
    sinks.publish(range(RECORDS))
    with sinks.open("test-producer") as kafka:
        kafka.publish(sinks.topics["jdbc"], [POISON])
    tolerant = {
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
    }
    for sink in sinks.sinks:
        config = sinks.config(sink, **(tolerant if sink == "jdbc" else {}))
        cluster.create(sinks.name(sink), config)
    return sinks, dlq


def written_keys(output: Path) -> list[str]:
    keys: list[str] = []
    for task_dir in sorted(output.glob("task-*")):
        for path in committed_files(task_dir):
            keys += [json.loads(line)["key"] for line in path.read_text().splitlines() if line]
    return keys
