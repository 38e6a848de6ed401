"""A cluster on Apache Kafka secured as users secure it: SCRAM-SHA-512 over TLS, with
Kafka Connect's worker keys. Every client the worker opens logs in: membership, the
config and status topics, and a connector's reads inside Spark. A wrong password or an
untrusted certificate stops the worker with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cluster import Cluster
from tests.support.file_sink import committed_files
from tests.support.kafka_topics import create_topic, keyed
from tests.support.polling import wait_until
from tests.support.processes import free_port
from tests.support.secured_kafka import WORKER, client_settings, make_authority, secured_kafka
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


def test_a_cluster_runs_on_scram_over_tls_and_refuses_bad_logins(tmp_path: Path) -> None:
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


def written_keys(output: Path) -> list[str]:
    keys: list[str] = []
    for task_dir in sorted(output.glob("task-*")):
        for path in committed_files(task_dir):
            keys += [json.loads(line)["key"] for line in path.read_text().splitlines() if line]
    return keys
