"""Automatic restarts of failed connectors and tasks: the policy, and who is due when.

Pure: the clock is injected and nothing here starts, stops or waits. `LocalWork` tells a
`RestartTracker` every state it reports for its work; a FAILED one is answered with a
`Verdict` (a restart at some time, or none and why), whose `note` ends the status trace.
The group loop later takes what is due (`take_due`) and restarts it in its ordered path.

The rules (docs/operations/configuration.md, "Automatic restarts"):

* Restart *n* (1-based) runs `initial_backoff_ms * 2**(n-1)` after the failure, capped
  at `max_backoff_ms`; after `max_attempts` automatic restarts in a row that all failed,
  the item stays FAILED until a manual restart.
* A run succeeded once it has been RUNNING for `max_backoff_ms` without interruption:
  the failure that ends such a run starts counting from zero again. A shorter run counts
  as one more failed attempt, so a task that keeps failing soon after it starts still
  runs out of attempts.
* A manual restart, a reconfiguration, a pause and resume, or losing the item to another
  worker forgets its count (`forget`).
* A task that failed because another worker has claimed it (fencing) is not restarted:
  its new owner runs it.
* Nor is a task whose checkpoint no longer fits its config (`needs_new_checkpoint`): a
  restart resumes the same checkpoint and fails the same way, so the trace says how to
  start over instead.

A connector, too, is restarted this way: it fails only when its config does not pass
the worker's checks as it starts (a placeholder its provider cannot resolve yet, say).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Final, TypeVar

from pydantic import ValidationError

from protocol.messages import ConnectorTaskId
from worker.plugins.auto_restart_settings import AutoRestartSettings
from worker.plugins.task_state import FENCED_MARK, NOT_FIT_MARK, TaskState

log = logging.getLogger(__name__)

_T = TypeVar("_T")

Item = str | ConnectorTaskId
"""A connector (by name) or a task."""

UNFIT_CHECKPOINT_MARKS: Final = (NOT_FIT_MARK, "BATCH_METADATA_NOT_FOUND")
"""What the trace of a task says when its checkpoint does not fit its config: sparkherd's
own check as the task starts, or Spark's file sink finding that its output's commit log
lacks the batches the checkpoint has committed (another `output.path`, or an output
directory emptied under a running connector)."""

_MAX_DOUBLINGS: Final = 40
"""Beyond this many doublings any back-off is past its cap (2**40 ms is 35 years)."""


@dataclass(frozen=True)
class RestartPolicy:
    """The `auto.restart.*` settings, of the worker or of one connector."""

    enabled: bool = True
    max_attempts: int = 5
    initial_backoff_ms: int = 5_000
    max_backoff_ms: int = 60_000

    def for_connector(self, config: Mapping[str, str]) -> RestartPolicy:
        """This policy with a connector config's own `auto.restart.*` keys applied.

        The leader checked them before storing the config; one that cannot be read here
        all the same (a `${...}` placeholder, which only a starting task resolves) leaves
        the worker's settings in force.
        """
        try:
            own = AutoRestartSettings.model_validate(dict(config))
        except ValidationError as exc:
            log.warning("Ignoring the connector's auto.restart.* settings: %s", exc)
            return self
        return RestartPolicy(
            enabled=_given(own.auto_restart_enabled, self.enabled),
            max_attempts=_given(own.auto_restart_max_attempts, self.max_attempts),
            initial_backoff_ms=_given(own.auto_restart_initial_backoff_ms, self.initial_backoff_ms),
            max_backoff_ms=_given(own.auto_restart_max_backoff_ms, self.max_backoff_ms),
        )

    def delay_s(self, attempt: int) -> float:
        """How long after a failure automatic restart `attempt` (1-based) runs."""
        doublings = min(max(attempt - 1, 0), _MAX_DOUBLINGS)
        return min(self.initial_backoff_ms << doublings, self.max_backoff_ms) / 1000

    @property
    def success_after_s(self) -> float:
        """How long a run must last, RUNNING throughout, to reset the count."""
        return self.max_backoff_ms / 1000


def _given(own: _T | None, inherited: _T) -> _T:
    return inherited if own is None else own


def is_fenced(trace: str | None) -> bool:
    """Whether a task's trace says another worker has claimed the task."""
    return trace is not None and FENCED_MARK in trace


def needs_new_checkpoint(trace: str | None) -> bool:
    """Whether a task's trace says that its checkpoint cannot be resumed with its config,
    which only a reset of its offsets (or the config it was made for) can heal."""
    return trace is not None and any(mark in trace for mark in UNFIT_CHECKPOINT_MARKS)


class Outcome(Enum):
    SCHEDULED = "scheduled"
    """An automatic restart is due at `Verdict.restart_at`."""
    EXHAUSTED = "exhausted"
    """The last automatic restart failed too: it stays FAILED until a manual restart."""
    FENCED = "fenced"
    """Another worker claims the task; not restarted here."""
    UNFIT_CHECKPOINT = "unfit checkpoint"
    """The task's checkpoint does not fit its config; a restart would fail the same way."""
    DISABLED = "disabled"
    """`auto.restart.enabled=false`."""


@dataclass(frozen=True)
class Verdict:
    """What one failure leads to."""

    outcome: Outcome
    failed_attempt: int
    """The automatic restart that failed; 0: the run before any."""
    max_attempts: int
    restart_at: float | None = None
    delay_s: float = 0.0

    def note(self, item: Item) -> str | None:
        """The line that ends the item's status trace (None: nothing to add)."""
        noun = "task" if isinstance(item, ConnectorTaskId) else "connector"
        failed = (
            f"Automatic restart {self.failed_attempt} of {self.max_attempts} failed"
            if self.failed_attempt
            else f"The {noun} failed"
        )
        if self.outcome is Outcome.SCHEDULED and self.restart_at is not None:
            at = datetime.fromtimestamp(self.restart_at, UTC).isoformat(timespec="milliseconds")
            return (
                f"{failed}; automatic restart {self.failed_attempt + 1} of {self.max_attempts} "
                f"at {at} (in {self.delay_s:g} s)."
            )
        if self.outcome is Outcome.EXHAUSTED:
            return (
                f"{failed}; the {noun} stays FAILED until it is restarted manually "
                f"(POST {restart_path(item)})."
            )
        if self.outcome is Outcome.FENCED:
            return f"Not restarted automatically: another worker has claimed the {noun}."
        if self.outcome is Outcome.UNFIT_CHECKPOINT and isinstance(item, ConnectorTaskId):
            base = f"/connectors/{item.connector}"
            return (
                f"Not restarted automatically: the {noun}'s checkpoint does not fit its "
                "config (was the connector re-created or reconfigured with another "
                "output.path?), and every restart would fail the same way. To start over, "
                f"stop the connector (PUT {base}/stop), reset its offsets (DELETE "
                f"{base}/offsets) and resume it (PUT {base}/resume); or give it back the "
                "config its checkpoint was made for; or create it under another name."
            )
        return None

    def appended_to(self, trace: str | None, item: Item) -> str | None:
        note = self.note(item)
        if note is None:
            return trace
        return note if not trace else f"{trace}\n{note}"


def restart_path(item: Item) -> str:
    """The REST call that restarts `item` by hand."""
    if isinstance(item, ConnectorTaskId):
        return f"/connectors/{item.connector}/tasks/{item.task}/restart"
    return f"/connectors/{item}/restart"


@dataclass
class _Record:
    attempts: int = 0
    """Automatic restarts begun since the count was last reset."""
    running_since: float | None = None
    due_at: float | None = None


class RestartTracker:
    """Every item's count of automatic restarts, and which restart is due when.

    `clock` gives the time in seconds (the epoch, as `time.time`: a restart's time is
    shown in the trace).
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._records: dict[Item, _Record] = {}
        self.begun = 0
        """Automatic restarts begun since the worker started."""

    def failed(self, item: Item, policy: RestartPolicy, trace: str | None) -> Verdict:
        """`item` was reported FAILED: schedule its next restart, if any."""
        now = self._clock()
        record = self._records.setdefault(item, _Record())
        ran_from, record.running_since, record.due_at = record.running_since, None, None
        if ran_from is not None and now - ran_from >= policy.success_after_s:
            record.attempts = 0
        failed_attempt, limit = record.attempts, policy.max_attempts
        if isinstance(item, ConnectorTaskId) and is_fenced(trace):
            return Verdict(Outcome.FENCED, failed_attempt, limit)
        if isinstance(item, ConnectorTaskId) and needs_new_checkpoint(trace):
            return Verdict(Outcome.UNFIT_CHECKPOINT, failed_attempt, limit)
        if not policy.enabled:
            return Verdict(Outcome.DISABLED, failed_attempt, limit)
        if failed_attempt >= limit:
            return Verdict(Outcome.EXHAUSTED, failed_attempt, limit)
        delay_s = policy.delay_s(failed_attempt + 1)
        record.due_at = now + delay_s
        return Verdict(Outcome.SCHEDULED, failed_attempt, limit, record.due_at, delay_s)

    def reported(self, item: Item, state: TaskState) -> None:
        """Any state but FAILED: a pending restart is off (the item is restarting, or was
        stopped, paused or restarted by hand), and RUNNING starts a run."""
        record = self._records.get(item)
        if record is None:
            if state is not TaskState.RUNNING:
                return
            record = self._records.setdefault(item, _Record())
        record.due_at = None
        record.running_since = self._clock() if state is TaskState.RUNNING else None

    def forget(self, item: Item) -> None:
        """Count from zero again: restarted by hand, reconfigured, or no longer here."""
        self._records.pop(item, None)

    def take_due(self) -> list[Item]:
        """The items whose restart is due now, oldest due first; each counts as begun."""
        now = self._clock()
        due = sorted(
            (
                (record.due_at, item)
                for item, record in self._records.items()
                if record.due_at is not None and record.due_at <= now
            ),
            key=lambda pair: pair[0],
        )
        for _, item in due:
            record = self._records[item]
            record.due_at = None
            record.attempts += 1
            self.begun += 1
        return [item for _, item in due]

    def next_due_in(self) -> float | None:
        """Seconds until the next restart is due (0 if one is overdue); None if none."""
        due = [r.due_at for r in self._records.values() if r.due_at is not None]
        return None if not due else max(0.0, min(due) - self._clock())

    def attempts(self, item: Item) -> int:
        record = self._records.get(item)
        return 0 if record is None else record.attempts
