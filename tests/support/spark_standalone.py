"""A Spark standalone cluster (one master, one worker) on loopback, from the Spark that
the pyspark package ships: the real daemons a sparkherd worker submits to with
`spark.master=spark://...`."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from pyspark.find_spark_home import _find_spark_home

from tests.support.polling import wait_until
from tests.support.processes import free_port


@dataclass(frozen=True)
class StandaloneCluster:
    master_url: str
    web_url: str

    def state(self) -> dict[str, Any]:
        body: dict[str, Any] = httpx.get(f"{self.web_url}/json/", timeout=5).json()
        return body


def _daemon(log: Path, *args: str) -> subprocess.Popen[bytes]:
    spark_class = Path(_find_spark_home()) / "bin" / "spark-class"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    with open(log, "ab") as out:
        return subprocess.Popen(
            [str(spark_class), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


@contextlib.contextmanager
def running_standalone_cluster(root: Path, cores: int = 1) -> Iterator[StandaloneCluster]:
    root.mkdir(parents=True, exist_ok=True)
    port, web_port = free_port(), free_port()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web_port}")
    daemons = [
        _daemon(
            root / "master.log",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web_port)),
        )
    ]
    try:
        wait_until(lambda: cluster.state()["status"] == "ALIVE", 60, what="the Spark master")
        daemons.append(
            _daemon(
                root / "worker.log",
                "org.apache.spark.deploy.worker.Worker",
                cluster.master_url,
                *("--host", "127.0.0.1", "--webui-port", str(free_port())),
                *("--cores", str(cores), "--memory", "1g", "--work-dir", str(root / "work")),
            )
        )
        wait_until(lambda: cluster.state()["aliveworkers"] == 1, 60, what="a Spark worker")
        yield cluster
    finally:
        for daemon in daemons:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
