"""Task states as a worker sees them, named as Kafka Connect names them.

Kept apart from the Spark runtime so the herder and the REST layer can speak of states
without importing PySpark.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TaskState(StrEnum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    RESTARTING = "RESTARTING"


@dataclass(frozen=True)
class TaskStatus:
    """This worker's own view of one task; the cluster view adds worker id and generation.

    `started_at` is ISO-8601 UTC, set when the task's query started; `trace` is set when
    the task FAILED.
    """

    state: TaskState
    trace: str | None = None
    started_at: str | None = None


@dataclass
class StartupCounts:
    """Starts since the worker started (Kafka Connect's connector- and task-startup-*)."""

    attempts: int = 0
    successes: int = 0
    failures: int = 0
