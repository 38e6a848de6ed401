"""The load a worker reports to its group's leader (`Subscription.load`, protocol v5).

The leader closes an overloaded worker to new tasks while another has room, and breaks
ties between workers holding as many tasks by their loads (`herder.assignor.room`). So the
figure must say two things: whether this worker is overloaded, as it says so itself
(`sparkherd_worker_overloaded`, `/health`: a task is behind its trigger), and otherwise
how much of its driver its tasks ask for.

Only a task that has committed a batch since it started here counts toward the overload.
Before its first batch a task's lag runs from its query's start, so the tasks a rebalance
has just started look behind for a few seconds on a busy machine: counted, they would
close the worker to the very next round, its share would go to the others, and count
balance would move running tasks back once the worker reopened. A worker whose driver is
really short keeps its older tasks behind, which still say so.

That demand is what a task's newest batch took over its trigger interval (a task that
takes 0.5 s per 2 s trigger asks for a quarter of the driver), capped at the whole driver
per task and summed: a worker on cadence reads under 1000 per mille. A task whose newest
trigger read nothing asks for nothing (it waits for data), and one with no batch counted
yet is taken to ask what the measured ones do on average, since a freshly started task
costs about what its neighbours cost. Tasks without a trigger interval have no cadence
and are left out (`SparkTaskRuntime.trigger_lags` lists only the others).
"""

from __future__ import annotations

from collections.abc import Mapping

from protocol.messages import OVERLOADED_LOAD, ConnectorTaskId
from protocol.wire import INT16_MAX
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import TriggerLag, tasks_behind


def driver_load(
    lags: Mapping[ConnectorTaskId, TriggerLag], progress: Mapping[ConnectorTaskId, TaskProgress]
) -> int:
    """Per mille of the driver: at least `OVERLOADED_LOAD` while a task that has committed
    a batch since it started is behind its trigger, else under it. `lags` are the running
    tasks' trigger lags as of now (the runtime's clock), `progress` their newest counted
    batches."""
    shares = [
        _share(lag, progress[task]) for task, lag in lags.items() if _measured(progress.get(task))
    ]
    unmeasured = len(lags) - len(shares)
    demand = sum(shares) + (unmeasured * sum(shares) / len(shares) if shares else 0.0)
    permille = round(demand * 1000)
    started = {task: lag for task, lag in lags.items() if _committed(progress.get(task))}
    if tasks_behind(started):
        return min(INT16_MAX, max(OVERLOADED_LOAD, permille))
    return min(OVERLOADED_LOAD - 1, permille)


def _measured(progress: TaskProgress | None) -> bool:
    return progress is not None and progress.batch_id >= 0


def _committed(progress: TaskProgress | None) -> bool:
    """Whether the task has committed a batch since it started on this worker."""
    return progress is not None and progress.committed_at is not None


def _share(lag: TriggerLag, progress: TaskProgress) -> float:
    if progress.input_rows_per_second <= 0 or lag.interval_s <= 0:
        return 0.0
    return min(1.0, progress.batch_duration_ms / 1000 / lag.interval_s)
