"""How far each task is behind its trigger, and when a worker counts as overloaded.

A task's trigger asks for a batch every interval; a task that keeps up commits one about
every interval, so the time since its newest commit stays under about one interval. The
lag is what that time has beyond one interval: 0 for a task on cadence, growing while a
task waits for a share of the driver (a worker with more light tasks than it can run
starved its later tasks: some committed nothing for a minute, and nothing said so). A
task whose last trigger found nothing to read is not behind, however old its newest
commit: it waits for data, not for the driver.

A task is behind once its lag passes one interval (it then commits fewer than half the
batches its trigger asks for), and never for less than `LAG_FLOOR_S`: the look at Spark
is once a second, and a short trigger would otherwise count every pause as starvation.
A worker with a task behind is overloaded: it says so in `/metrics`, `/health` and `/ui`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from protocol.messages import ConnectorTaskId

LAG_FLOOR_S: Final = 1.0
OVERLOADED_MARK: Final = "Overloaded:"
"""How `/health`'s message begins the line about an overload (`/ui` shows that line)."""


@dataclass(frozen=True)
class Cadence:
    """What the lag of one running task is worked out from."""

    interval_s: float
    """The query's trigger interval."""
    last_commit_at: float
    """Epoch seconds: when its newest batch committed (ended), or when the query started
    if none has yet."""
    waiting_for_data: bool = False
    """Its newest trigger found nothing to read."""


@dataclass(frozen=True)
class TriggerLag:
    lag_s: float
    interval_s: float

    @property
    def behind(self) -> bool:
        return self.lag_s > max(self.interval_s, LAG_FLOOR_S)


def trigger_lag(cadence: Cadence, now: float) -> TriggerLag:
    lag = 0.0 if cadence.waiting_for_data else now - cadence.last_commit_at - cadence.interval_s
    return TriggerLag(max(0.0, lag), cadence.interval_s)


def tasks_behind(lags: Mapping[ConnectorTaskId, TriggerLag]) -> dict[ConnectorTaskId, float]:
    """The tasks behind their trigger, with their lag, most behind first."""
    behind = {task: lag.lag_s for task, lag in lags.items() if lag.behind}
    return dict(sorted(behind.items(), key=lambda item: (-item[1], item[0])))


def overload_line(lags: Mapping[ConnectorTaskId, TriggerLag], shown: int = 3) -> str | None:
    """What `/health` adds to its message while tasks are behind (None: none is)."""
    behind = tasks_behind(lags)
    if not behind:
        return None
    named = ", ".join(f"{task} {lag:.1f} s" for task, lag in list(behind.items())[:shown])
    more = f" and {len(behind) - shown} more" if len(behind) > shown else ""
    return (
        f"{OVERLOADED_MARK} {len(behind)} of {len(lags)} running tasks are behind their "
        f"trigger (lag: {named}{more}); the worker has more tasks than its driver can run "
        "on cadence."
    )
