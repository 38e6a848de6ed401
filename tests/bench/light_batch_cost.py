"""The driver's fixed cost of a light batch (issue 34, item 3): CPU milliseconds the
worker's process and its Spark JVM spend per committed batch of `generator` tasks that
write a few rows a batch, on one `local[1]` session, through the real task runtime (its
once-a-second look at every query included).

A batch of 10 rows costs the driver about as much as an empty one: planning the batch,
writing its offsets and commit logs, the file sink's metadata log, the job, the
`foreachBatch` call into Python, and the monitor's looks. So the tasks a worker can keep
on cadence depend on this cost, not on rows. Each `--set` runs a session of its own with
that Spark setting, so settings can be compared run by run; the figures of a loaded
machine are noisy (the load average is printed with each).

    python -m tests.bench.light_batch_cost                      # 20 tasks, the defaults
    python -m tests.bench.light_batch_cost --set spark.ui.retainedJobs=50
    python -m tests.bench.light_batch_cost --monitor-interval 10   # the looks' share
    python -m tests.bench.light_batch_cost --jfr /tmp/batches.jfr  # where the JVM spends it

`--jfr` records the measured window with Java Flight Recorder (`jcmd <pid> JFR.start`,
the `profile` settings); `jfr print --events jdk.ExecutionSample` then shows the JVM's
stacks, sampled every 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from protocol.messages import ConnectorTaskId
from tests.bench.result_file import ResultFile, add_json_option
from tests.support.cluster import generator_config
from tests.support.plugins import plugins_for
from worker.connectors import default_registry
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.runtime.checkpoint_offsets import newest_committed_batch
from worker.runtime.spark_session import SparkSessionProvider
from worker.runtime.spark_task_runtime import MONITOR_INTERVAL_S, SparkTaskRuntime

INTERVAL_MS = 2000
ROWS_PER_SECOND = 5


def cpu_seconds(pid: int, thread: str | None = None, children: bool = False) -> float:
    """User plus system CPU of one process (or one of its threads), from /proc (Linux);
    with `children`, that of its ended children instead (Hadoop's local file system
    runs `chmod` and `readlink` as processes where it lacks its native library)."""
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    first = 13 if children else 11
    return (int(fields[first]) + int(fields[first + 1])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """CPU seconds of each kind of thread of a process (its threads' names, digits made
    `#`: the JIT's `C2 CompilerThre#`, `GC Thread#`, Spark's `stream execution thread`
    of every query, ...), from /proc (Linux). Threads that ended are left out."""
    seconds: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            kind = re.sub(r"\d+", "#", name)
            seconds[kind] = seconds.get(kind, 0.0) + cpu_seconds(pid, task.name)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return seconds


def jcmd(pid: int, *command: str) -> None:
    """A diagnostic command to the Spark JVM (Java Flight Recorder's start and stop)."""
    subprocess.run(["jcmd", str(pid), *command], check=True, capture_output=True)


def committed(root: Path, tasks: list[ConnectorTaskId]) -> dict[ConnectorTaskId, int]:
    """Each task's newest committed batch, from its checkpoint's commit log (exact)."""
    return {
        task: newest_committed_batch(checkpoint_dir_for(root, task.connector, task.task))
        for task in tasks
    }


async def measure(
    tasks: int,
    warm_s: float,
    window_s: float,
    conf: dict[str, str],
    monitor_s: float,
    root: Path,
    jfr: Path | None,
) -> dict[str, Any]:
    """Prints the window's figures and returns them (CPU in ms per committed batch)."""
    spark = SparkSessionProvider({"spark.master": "local[1]", **conf}, "light-batch-cost")
    plugins = plugins_for(default_registry(), root / "checkpoints", spark.get)
    runtime = SparkTaskRuntime(
        spark,
        plugins,
        root / "checkpoints",
        "bench:0",
        10_000,
        lambda *_: None,
        monitor_interval_s=monitor_s,
    )

    def config(task: ConnectorTaskId) -> dict[str, str]:
        return generator_config(root / "out" / task.connector, 1, ROWS_PER_SECOND, INTERVAL_MS)

    try:
        await runtime.warm_up()
        session = spark.get()
        jvm_pid = int(session.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        ids = [ConnectorTaskId(f"light-{i:02d}", 0) for i in range(tasks)]
        for task in ids:
            await runtime.start_task(task, config(task), config(task), 1)
        await asyncio.sleep(warm_s)

        def cpu() -> tuple[float, float, float]:
            """Of this Python process, of the Spark JVM and of the processes it ran."""
            return (
                cpu_seconds(os.getpid()),
                cpu_seconds(jvm_pid),
                cpu_seconds(jvm_pid, children=True),
            )

        if jfr is not None:
            jcmd(jvm_pid, "JFR.start", "name=batches", "settings=profile")
        checkpoints = root / "checkpoints"
        compilations = session.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
        compiled_before = compilations.METRIC_COMPILATION_TIME().getCount()
        threads_before = thread_cpu_seconds(jvm_pid)
        before, cpu_before, began = committed(checkpoints, ids), cpu(), time.monotonic()
        worst_lag, lagged = 0.0, 0
        while time.monotonic() - began < window_s:
            await asyncio.sleep(1.0)
            lags = runtime.trigger_lags()
            lagged = max(lagged, len(lags))
            worst_lag = max([worst_lag, *(lag.lag_s for lag in lags.values())])
        after, cpu_after = committed(checkpoints, ids), cpu()
        compiled = compilations.METRIC_COMPILATION_TIME().getCount() - compiled_before
        threads = {
            kind: seconds - threads_before.get(kind, 0.0)
            for kind, seconds in thread_cpu_seconds(jvm_pid).items()
        }
        if jfr is not None:
            jcmd(jvm_pid, "JFR.stop", "name=batches", f"filename={jfr}")
        elapsed = time.monotonic() - began
        per_task = [after[t] - before[t] for t in ids]
        batches = sum(per_task)
        python_ms, jvm_ms, children_ms = (
            (end - start) * 1000 / max(batches, 1)
            for start, end in zip(cpu_before, cpu_after, strict=True)
        )
        per_minute = sorted(n * 60 / elapsed for n in per_task)
        print(
            f"{tasks} tasks, {window_s:.0f} s, settings {conf or 'default'}, "
            f"monitor every {monitor_s:g} s, "
            f"load {os.getloadavg()[0]:.1f}:\n"
            f"  driver CPU per committed batch: {python_ms + jvm_ms + children_ms:.1f} ms "
            f"(Python {python_ms:.1f}, JVM {jvm_ms:.1f}, processes the JVM ran "
            f"{children_ms:.1f}; {batches} batches; "
            f"{compiled / max(batches, 1):.2f} code compilations a batch)\n"
            f"  batches per task per minute: min {per_minute[0]:.1f} "
            f"median {statistics.median(per_minute):.1f} ideal {60_000 // INTERVAL_MS}, "
            f"none: {sum(1 for n in per_task if n <= 0)}; worst trigger lag {worst_lag:.1f} s "
            f"(of {lagged} tasks with a lag)\n"
            "  JVM CPU per batch by thread: "
            + ", ".join(
                f"{name} {seconds * 1000 / max(batches, 1):.1f}"
                for name, seconds in sorted(threads.items(), key=lambda kv: -kv[1])[:8]
            )
        )
        return {
            "batches": batches,
            "cpu_ms_a_batch": {"python": python_ms, "jvm": jvm_ms, "processes": children_ms},
            "compilations_a_batch": compiled / max(batches, 1),
            "batches_per_task_per_minute": per_minute,
            "tasks_with_none": sum(1 for n in per_task if n <= 0),
            "worst_trigger_lag_s": worst_lag,
            "jvm_cpu_s_by_thread": threads,
        }
    finally:
        await runtime.stop_all()
        await asyncio.to_thread(spark.stop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--warm", type=float, default=30.0, help="seconds before measuring")
    parser.add_argument("--window", type=float, default=60.0, help="seconds measured")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    parser.add_argument(
        "--monitor-interval",
        type=float,
        default=MONITOR_INTERVAL_S,
        help="seconds between the runtime's looks at the queries",
    )
    parser.add_argument(
        "--jfr", type=Path, help="record the window with Java Flight Recorder into this file"
    )
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    conf = dict(setting.split("=", 1) for setting in args.set)
    with tempfile.TemporaryDirectory(prefix="sparkherd-light-") as root:
        figures = asyncio.run(
            measure(
                args.tasks,
                args.warm,
                args.window,
                conf,
                args.monitor_interval,
                Path(root),
                args.jfr,
            )
        )
    result.write(figures, {"interval_ms": INTERVAL_MS})


if __name__ == "__main__":
    main()
