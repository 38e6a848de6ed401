"""A worker whose `spark.master` is a Spark standalone cluster runs its tasks' jobs on the
cluster's executors: every `spark.*` key reaches the session, and the checkpoint and
output live where both driver and executors can reach them."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config
from tests.support.file_sink import committed_column, committed_files
from tests.support.polling import wait_until
from tests.support.processes import ready_worker
from tests.support.spark_standalone import running_standalone_cluster

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 120


def test_tasks_run_on_a_spark_standalone_cluster(broker: EmbeddedBroker, tmp_path: Path) -> None:
    output = tmp_path / "out"
    with running_standalone_cluster(tmp_path / "spark") as spark:
        settings = [
            f"spark.master={spark.master_url}",
            "spark.driver.host=127.0.0.1",
            "spark.driver.bindAddress=127.0.0.1",
            "spark.executor.memory=512m",
            "spark.cores.max=1",
        ]
        with ready_worker("on-cluster", broker.bootstrap_servers, tmp_path, settings) as worker:
            created = httpx.post(
                f"{worker.url}/connectors",
                json={"name": "remote", "config": generator_config(output, tasks=1)},
                timeout=30,
            )
            assert created.status_code == 201, created.text
            wait_until(
                lambda: len(committed_files(output / "task-0")) >= 2, TIMEOUT_S, what="batches"
            )
            [app] = spark.state()["activeapps"]
            assert app["name"] == f"sparkherd-{worker.url.removeprefix('http://')}"
            assert app["cores"] == 1, "the app got no executor"
            assert list((tmp_path / "spark" / "work" / app["id"]).iterdir()), "no executor ran"
            seqs = committed_column(output / "task-0", "seq")
            assert seqs == list(range(len(seqs)))
