"""Task start latency in a warm worker: from the runtime being handed an assigned task to
the task being RUNNING (its checkpoint claimed, its streaming query started).

This is the part of a hand-off the worker controls once a rebalance has assigned a task;
the rebalance round itself is measured by cluster_rebalance.py. "Warm" means the
worker's SparkSession exists and has started a query before, as it has in any worker
that runs tasks. Three cases: first starts while more and more queries run, restarts of
a task from its checkpoint, and a restart of every running task at once (a worker that
gets a batch of tasks in one round).

    python -m tests.bench.task_start_latency            # 12 tasks, 10 restarts
    python -m tests.bench.task_start_latency --quick    # 4 tasks, 4 restarts
    python -m tests.bench.task_start_latency --json     # and a result file (result_file.py)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from protocol.messages import ConnectorTaskId
from tests.bench.result_file import ResultFile, add_json_option
from tests.support.cluster import generator_config
from tests.support.plugins import plugins_for
from worker.connectors import default_registry
from worker.plugins.task_state import TaskState
from worker.runtime.spark_session import SparkSessionProvider
from worker.runtime.spark_task_runtime import SparkTaskRuntime

GENERATION = 1
TARGET_P50_S = 1.0


def percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def summary(label: str, seconds: list[float]) -> str:
    shown = percentiles(seconds)
    return (
        f"{label:<36} n={len(seconds):<3} p50 {shown['p50']:6.3f} s   "
        f"p95 {shown['p95']:6.3f} s   max {shown['max']:6.3f} s"
    )


def described(seconds: list[float]) -> dict[str, Any]:
    return {"n": len(seconds), **percentiles(seconds), "each": seconds}


async def timed_start(
    runtime: SparkTaskRuntime, task: ConnectorTaskId, config: dict[str, str]
) -> float:
    began = time.perf_counter()
    await runtime.start_task(task, config, config, GENERATION)
    elapsed = time.perf_counter() - began
    status = runtime.task_status(task)
    if status is None or status.state is not TaskState.RUNNING:
        raise SystemExit(f"{task} did not start: {status}")
    return elapsed


async def measure(tasks: int, restarts: int, root: Path) -> dict[str, Any]:
    """The run's figures, in seconds; `single` holds every single-task start."""
    spark = SparkSessionProvider(
        {"spark.master": "local[2]", "spark.driver.memory": "1g"}, "task-start-latency"
    )
    plugins = plugins_for(default_registry(), root / "checkpoints", spark.get)
    runtime = SparkTaskRuntime(
        spark, plugins, root / "checkpoints", "bench:0", 10_000, lambda *_: None
    )
    config = generator_config(root / "out", tasks=1, rate=5)
    try:
        began = time.perf_counter()
        await runtime.warm_up()
        warm_up = time.perf_counter() - began
        print(f"warm-up before joining (SparkSession + one job): {warm_up:.1f} s")
        after_warm_up = await timed_start(runtime, ConnectorTaskId("warm-up", 0), config)
        print(f"first query after the warm-up: {after_warm_up:.3f} s")
        await runtime.stop_task(ConnectorTaskId("warm-up", 0))

        ids = [ConnectorTaskId("bench", i) for i in range(tasks)]
        first = [await timed_start(runtime, task, config) for task in ids]
        print(summary(f"first start, 0..{tasks - 1} running", first))

        again = []
        for round_ in range(restarts):
            task = ids[round_ % tasks]
            await runtime.stop_task(task)
            again.append(await timed_start(runtime, task, config))
        print(summary(f"restart from checkpoint, {tasks} running", again))

        await asyncio.gather(*(runtime.stop_task(task) for task in ids))
        began = time.perf_counter()
        together = await asyncio.gather(*(timed_start(runtime, task, config) for task in ids))
        print(summary(f"{tasks} started at once (each)", list(together)))
        all_at_once = time.perf_counter() - began
        print(f"{tasks} started at once (all):{'':<14}{all_at_once:.3f} s")
        return {
            "warm_up_s": warm_up,
            "first_query_after_warm_up_s": after_warm_up,
            "first_start": described(first),
            "restart_from_checkpoint": described(again),
            "started_at_once_each": described(list(together)),
            "started_at_once_all_s": all_at_once,
            "single": first + again,
        }
    finally:
        await runtime.stop_all()
        await asyncio.to_thread(spark.stop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a CI-sized run")
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    tasks, restarts = (4, 4) if args.quick else (12, 10)
    with tempfile.TemporaryDirectory(prefix="sparkherd-start-") as root:
        figures = asyncio.run(measure(tasks, restarts, Path(root)))
    p50 = statistics.median(figures.pop("single"))
    verdict = "meets" if p50 < TARGET_P50_S else "misses"
    print(f"single-task start p50 {p50:.3f} s {verdict} the {TARGET_P50_S:.0f} s target")
    result.write(
        {**figures, "single_task_start_p50_s": p50, "meets_target": p50 < TARGET_P50_S},
        {"tasks": tasks, "restarts": restarts, "target_p50_s": TARGET_P50_S},
    )


if __name__ == "__main__":
    main()
