"""The worker's one SparkSession, created by the warm-up before the worker joins its
group (or, with `worker.warmup.enabled=false`, when the first task needs it).

A worker process is a Spark driver and a process holds only one SparkContext, so every
task of every connector shares this session. Starting it costs seconds (JVM and Spark
start-up, tens of seconds on a busy machine), which is why it happens before the worker
takes any work: otherwise every task given to a freshly started worker waits for it.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final

from py4j.protocol import Py4JError
from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from worker.runtime.log_setup import LogFormat
from worker.runtime.maven_jars import JarResolutionError
from worker.runtime.temp_space import TempSpace, claim_temp_space

log = logging.getLogger(__name__)

STREAMING_CHECKPOINT_FILE_MANAGER: Final = "spark.sql.streaming.checkpointFileManagerClass"

DEFAULT_SPARK_CONF: Final[Mapping[str, str]] = MappingProxyType(
    {
        "spark.master": "local[*]",
        # The worker serves its own REST API; a Spark UI per worker is a second, unasked port.
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Connector tasks shuffle little; 200 partitions would mean 200 tiny tasks a batch.
        "spark.sql.shuffle.partitions": "4",
        # Batches run in the order they became due, whichever task they are of. FAIR pools
        # (one per task, equal weights) starved tasks outright once the worker was over
        # capacity: Spark breaks the tie between pools with no running task by pool name,
        # so the task with the smallest name took every free slot and, of 40 light tasks
        # on local[1], the last 21 created committed nothing for ten minutes.
        "spark.scheduler.mode": "FIFO",
        # Checkpoint logs (offsets, commits, a file sink's `_spark_metadata`) written through
        # Hadoop's FileSystem, not its FileContext: FileContext's rename asks for the file's
        # link status, which Hadoop's local file system (no native library in PySpark)
        # answers by running `readlink`, three processes a batch; with the chmod of every
        # new file they cost a light batch more driver CPU than the rest of it (issue 34:
        # 80 of 230 ms a batch, tests/bench/light_batch_cost.py). The rename is as atomic.
        STREAMING_CHECKPOINT_FILE_MANAGER: (
            "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager"
        ),
        "spark.log.level": "WARN",
        # A FAILED task's trace then carries the JVM stack, as a Kafka Connect trace does.
        "spark.sql.pyspark.jvmStacktrace.enabled": "true",
    }
)


LOOPBACK: Final = "127.0.0.1"


SPARK_LOG_CONFIGS: Final = {
    "text": Path(__file__).with_name("spark_log4j2.properties"),
    "json": Path(__file__).with_name("spark_log4j2_json.properties"),
}
LOG_CONFIG_OPTION: Final = "-Dlog4j2.configurationFile="


DRIVER_JAVA_OPTIONS: Final = "spark.driver.extraJavaOptions"


def with_driver_java_options(conf: Mapping[str, str], options: str) -> dict[str, str]:
    """`conf`, with `options` after the driver JVM's options it already has."""
    given = conf.get(DRIVER_JAVA_OPTIONS, "")
    return {**conf, DRIVER_JAVA_OPTIONS: f"{given} {options}".strip()}


def with_quiet_spark_log(conf: Mapping[str, str], log_format: LogFormat = "text") -> dict[str, str]:
    """`conf`, with the driver JVM logging through `spark_log4j2.properties` (warnings
    that matter, not the start-up notices; JSON lines for `log.format=json`) unless a
    log4j configuration is given."""
    if LOG_CONFIG_OPTION in conf.get(DRIVER_JAVA_OPTIONS, ""):
        return dict(conf)
    return with_driver_java_options(conf, f"{LOG_CONFIG_OPTION}{SPARK_LOG_CONFIGS[log_format]}")


def bound_to_loopback_when_local(conf: Mapping[str, str]) -> dict[str, str]:
    """`conf`, with the driver's RPC and block-manager ports on loopback when the master
    is local: every executor is then in this process, so nothing else needs to reach
    them, and Spark would otherwise listen on the host's external address without
    authentication (`spark.authenticate` is off by default). A setting given wins."""
    if not conf.get("spark.master", "").startswith("local"):
        return dict(conf)
    return {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK, **conf}


def in_temp_space(conf: Mapping[str, str], space: Path) -> dict[str, str]:
    """`conf`, with the JVM's temp files in `space`, and so Spark's local directories
    (`blockmgr-*`, `spark-*`), whose default is `java.io.tmpdir`. Setting
    `spark.local.dir` itself would do the same with a warning at every start (a cluster
    manager may override it); a `spark.local.dir` or `java.io.tmpdir` given wins."""
    if "-Djava.io.tmpdir=" in conf.get(DRIVER_JAVA_OPTIONS, ""):
        return dict(conf)
    return with_driver_java_options(conf, f"-Djava.io.tmpdir={space}")


def _start_jvm_apart(conf: Mapping[str, str], kept_fds: tuple[int, ...] = ()) -> SparkContext:
    """Start Spark's JVM in a session of its own, so a signal to the worker's process
    group (`kill -- -PGID`, systemd's `KillMode=control-group`) reaches only the worker.

    Otherwise the JVM's shutdown hook stops the SparkContext at once, and every task stop
    the worker then orchestrates fails ("Cannot call methods on a stopped SparkContext").
    The JVM still dies with the worker: it exits when its stdin, a pipe from this
    process, closes. It inherits `kept_fds` (the temp space's lock, held until the JVM
    too has exited).
    """
    spark_conf = SparkConf(loadDefaults=False).setAll(list(conf.items()))
    gateway = launch_gateway(
        spark_conf, popen_kwargs={"start_new_session": True, "pass_fds": kept_fds}
    )
    return SparkContext(conf=spark_conf, gateway=gateway)


class SparkSessionProvider:
    """Creates the worker's SparkSession on first `get()` and stops it on `stop()`.

    `get()` and `stop()` block (the first `get()` for seconds): callers on an event loop
    run them with `asyncio.to_thread`. Both are thread-safe. `conf` overrides the
    defaults key by key. Should the process already hold a SparkContext (an embedding
    application, a test), `get()` returns that session and Spark ignores the static
    settings given here.
    """

    def __init__(
        self,
        conf: Mapping[str, str],
        app_name: str,
        extra_jars: Callable[[], list[Path]] | None = None,
        log_format: LogFormat = "text",
        data_dir: Path | None = None,
    ) -> None:
        """`extra_jars` gives jars to add to `spark.jars` when the session starts (it may
        download them); when it raises `JarResolutionError` the session starts without.
        With `data_dir`, the JVM this provider starts keeps its temp space there
        (`worker.runtime.temp_space`), removed when the session stops."""
        self._conf: Mapping[str, str] = MappingProxyType(
            with_quiet_spark_log(
                bound_to_loopback_when_local({**DEFAULT_SPARK_CONF, **conf}), log_format
            )
        )
        self._extra_jars = extra_jars
        self._app_name = app_name
        self._lock = threading.Lock()
        self._session: SparkSession | None = None
        self._data_dir = data_dir
        self._temp_space: TempSpace | None = None

    @property
    def conf(self) -> Mapping[str, str]:
        """The settings the session is (or will be) created with: defaults plus overrides."""
        return self._conf

    @property
    def started(self) -> bool:
        return self._session is not None

    def get(self) -> SparkSession:
        with self._lock:
            if self._session is None:
                # Python data sources plan in Python processes the JVM starts with this
                # interpreter; the default, `python3` on PATH, may lack sparkherd's packages.
                os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
                if self._conf.get("spark.driver.bindAddress") == LOOPBACK:
                    # Else Spark warns, at every start, that the host name resolves to a
                    # loopback address and picks another interface it will not use.
                    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
                conf = {"spark.app.name": self._app_name, **self._with_extra_jars()}
                if SparkContext._active_spark_context is None:
                    conf = self._in_temp_space(conf)
                    kept = () if self._temp_space is None else (self._temp_space.lock_fd,)
                    _start_jvm_apart(conf, kept)
                builder = SparkSession.builder.appName(self._app_name)
                for key, value in conf.items():
                    builder = builder.config(key, value)
                self._session = builder.getOrCreate()
            return self._session

    def _in_temp_space(self, conf: dict[str, str]) -> dict[str, str]:
        """Claim the temp space and make it this process's temp directory too, which the
        JVM and its Python workers inherit."""
        if self._data_dir is None:
            return conf
        try:
            self._temp_space = claim_temp_space(self._data_dir)
        except OSError as exc:
            log.warning(
                "data.dir %s cannot hold Spark's temp space (%s): it stays where the JVM "
                "puts it, and a killed worker's is left behind there",
                self._data_dir,
                exc,
            )
            return conf
        os.environ["TMPDIR"] = str(self._temp_space.path)
        tempfile.tempdir = str(self._temp_space.path)
        return in_temp_space(conf, self._temp_space.path)

    def _with_extra_jars(self) -> dict[str, str]:
        conf = dict(self._conf)
        if self._extra_jars is None:
            return conf
        try:
            jars = self._extra_jars()
        except JarResolutionError as exc:
            log.warning("Spark starts without the extra jars it was to have: %s", exc)
            return conf
        given = [conf["spark.jars"]] if conf.get("spark.jars") else []
        conf["spark.jars"] = ",".join([*given, *(str(jar) for jar in jars)])
        return conf

    def stop(self) -> None:
        """Stop the session; a JVM that is already gone (killed with the process group) is
        not an error at shutdown, since the checkpoints hold everything committed."""
        with self._lock:
            session, self._session = self._session, None
            space, self._temp_space = self._temp_space, None
            if session is not None:
                try:
                    session.stop()
                except (Py4JError, ConnectionError) as exc:
                    log.warning("Spark JVM already gone at shutdown: %s", exc)
            if space is not None:
                space.release()
