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
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from protocol.messages import ConnectorTaskId
from tests.support.cluster import generator_config
from tests.support.plugins import plugins_for
from worker.connectors import default_registry
from worker.runtime.checkpoint_layout import checkpoint_dir_for
from worker.runtime.checkpoint_offsets import newest_committed_batch
from worker.runtime.spark_session import SparkSessionProvider
from worker.runtime.spark_task_runtime import MONITOR_INTERVAL_S, SparkTaskRuntime

INTERVAL_MS = 2000
ROWS_PER_SECOND = 5


def cpu_seconds(pid: int) -> float:
    """User plus system CPU of one process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
) -> None:
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

        def cpu() -> tuple[float, float]:
            """Of this Python process, and of the Spark JVM."""
            return cpu_seconds(os.getpid()), cpu_seconds(jvm_pid)

        checkpoints = root / "checkpoints"
        before, cpu_before, began = committed(checkpoints, ids), cpu(), time.monotonic()
        worst_lag, lagged = 0.0, 0
        while time.monotonic() - began < window_s:
            await asyncio.sleep(1.0)
            lags = runtime.trigger_lags()
            lagged = max(lagged, len(lags))
            worst_lag = max([worst_lag, *(lag.lag_s for lag in lags.values())])
        after, cpu_after = committed(checkpoints, ids), cpu()
        elapsed = time.monotonic() - began
        per_task = [after[t] - before[t] for t in ids]
        batches = sum(per_task)
        python_ms, jvm_ms = (
            (end - start) * 1000 / max(batches, 1)
            for start, end in zip(cpu_before, cpu_after, strict=True)
        )
        per_minute = sorted(n * 60 / elapsed for n in per_task)
        print(
            f"{tasks} tasks, {window_s:.0f} s, settings {conf or 'default'}, "
            f"monitor every {monitor_s:g} s, "
            f"load {os.getloadavg()[0]:.1f}:\n"
            f"  driver CPU per committed batch: {python_ms + jvm_ms:.1f} ms (Python "
            f"{python_ms:.1f}, JVM {jvm_ms:.1f}; {batches} batches)\n"
            f"  batches per task per minute: min {per_minute[0]:.1f} "
            f"median {statistics.median(per_minute):.1f} ideal {60_000 // INTERVAL_MS}, "
            f"none: {sum(1 for n in per_task if n <= 0)}; worst trigger lag {worst_lag:.1f} s "
            f"(of {lagged} tasks with a lag)"
        )
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
    args = parser.parse_args()
    conf = dict(setting.split("=", 1) for setting in args.set)
    with tempfile.TemporaryDirectory(prefix="sparkherd-light-") as root:
        asyncio.run(
            measure(args.tasks, args.warm, args.window, conf, args.monitor_interval, Path(root))
        )


if __name__ == "__main__":
    main()
