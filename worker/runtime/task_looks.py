"""What the task monitor learns of each running query besides whether it still runs: its
progress, its error totals and its trigger cadence, as of the monitor's last look.

The runtime (`worker.runtime.spark_task_runtime`) owns the queries and decides which are
watched; this keeps what the looks found, per task, and forgets a task when it starts
again. Every look is blocking (py4j, checkpoint files) and runs on the monitor's daemon
thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from functools import partial
from pathlib import Path

from protocol.messages import ConnectorTaskId
from worker.records.errors.task_errors import BatchErrors
from worker.runtime.daemon_thread import DaemonThread
from worker.runtime.spark_queries import Launched, error_totals, query_progress, trigger_cadences
from worker.runtime.task_error_totals import TaskErrorTotals
from worker.runtime.task_progress import TaskProgress
from worker.runtime.trigger_lag import Cadence, TriggerLag, trigger_lag

log = logging.getLogger(__name__)


class TaskLooks:
    """The last looks at the tasks' queries; `thread` is the monitor's, which every look
    at Spark runs on."""

    def __init__(
        self, thread: DaemonThread, checkpoint_root: Path, clock: Callable[[], float]
    ) -> None:
        self._thread = thread
        self._checkpoint_root = checkpoint_root
        self._clock = clock
        self._progress: dict[ConnectorTaskId, TaskProgress] = {}
        self._errors: dict[ConnectorTaskId, TaskErrorTotals] = {}
        self._cadences: dict[ConnectorTaskId, Cadence] = {}

    def forget(self, task_id: ConnectorTaskId) -> None:
        """A new start of the task counts from what its checkpoint holds, not from the
        last start's looks."""
        self._progress.pop(task_id, None)
        self._errors.pop(task_id, None)
        self._cadences.pop(task_id, None)

    def progress(self, held: Collection[ConnectorTaskId]) -> dict[ConnectorTaskId, TaskProgress]:
        return {t: p for t, p in self._progress.items() if t in held}

    def errors(self, held: Collection[ConnectorTaskId]) -> dict[ConnectorTaskId, BatchErrors]:
        return {t: e.totals for t, e in self._errors.items() if t in held}

    def trigger_lags(
        self, running: Collection[ConnectorTaskId]
    ) -> dict[ConnectorTaskId, TriggerLag]:
        """How far each running task is behind its trigger now, from the last look at its
        cadence: a look that hangs lets the lag grow, not freeze."""
        now = self._clock()
        return {t: trigger_lag(c, now) for t, c in self._cadences.items() if t in running}

    async def look(
        self,
        launches: Mapping[ConnectorTaskId, Launched],
        watched: Callable[[ConnectorTaskId], bool],
    ) -> None:
        """A query stopping meanwhile may fail the look; its progress no longer matters.
        The error totals are read from the checkpoint, not asked of Spark, so a failed
        look at Spark does not hold them back."""
        try:
            seen = partial(
                query_progress, launches, dict(self._progress), watched, self._checkpoint_root
            )
            self._progress.update(await self._thread.call(seen))
            pace = partial(trigger_cadences, launches, dict(self._progress), watched, self._clock())
            self._cadences.update(await self._thread.call(pace))
        except Exception as exc:
            log.debug("Could not read the tasks' progress: %s", exc)
        try:
            count = partial(
                error_totals, list(launches), dict(self._errors), watched, self._checkpoint_root
            )
            self._errors.update(await self._thread.call(count))
        except Exception as exc:
            log.debug("Could not read the tasks' error counts: %s", exc)
