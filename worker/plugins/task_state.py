"""Task states as a worker sees them, named as Kafka Connect names them.

Kept apart from the Spark runtime so the herder and the REST layer can speak of states
without importing PySpark; with them, what a FAILED task's trace says that the herder
acts on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from protocol.messages import ConnectorTaskId

FENCED_MARK: Final = " was fenced: it is now claimed by "
"""What the trace of a task fenced by another worker's claim says; the herder reads it
to leave the task to its new owner."""
NOT_FIT_MARK: Final = "checkpoint was made for another "
"""What the failure of a task whose checkpoint does not fit its config says; the herder
reads it to leave the task alone (a restart would fail the same way)."""


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


StateListener = Callable[[ConnectorTaskId, TaskStatus], None]
"""Told each new status of a task its runtime holds, on the herder's event loop."""


@dataclass
class StartupCounts:
    """Starts since the worker started (Kafka Connect's connector- and task-startup-*)."""

    attempts: int = 0
    successes: int = 0
    failures: int = 0
