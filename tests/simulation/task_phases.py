"""A simulated worker's tasks, each through the worker's own task machine
(`herder.tasks.task_machine`), its commands carried out on the ledger.

The simulator has no Spark query: a launch is the ledger's start (the ledger accounts
for a task's start-up time) and ends at once, and a stop is the ledger's stop; a task
handed over in the round that revokes it elsewhere waits on the ledger for its release.
Pauses, restarts and config changes are not simulated; the machine's rows for them are
the unit tests' (tests/unit/herder/test_task_machine.py).
"""

from __future__ import annotations

from herder.tasks.task_machine import TaskCommand, TaskEvent, TaskPhase, step
from protocol.messages import ConnectorTaskId
from tests.simulation.config_log import Item
from tests.simulation.ledger import RunLedger


class SimTasks:
    """`running` and `awaiting` are the worker's own sets (its connectors run there too):
    a task is in `running` from its launch to its stop, in `awaiting` while it waits."""

    def __init__(
        self, worker: str, ledger: RunLedger, running: set[Item], awaiting: set[Item]
    ) -> None:
        self._worker = worker
        self._ledger = ledger
        self._running = running
        self._awaiting = awaiting
        self.phases: dict[ConnectorTaskId, TaskPhase] = {}

    def assign(self, task: ConnectorTaskId, *, awaiting: bool) -> None:
        self.phases[task] = TaskPhase.NEW
        self._feed(task, TaskEvent.ASSIGNED_AFTER_RELEASE if awaiting else TaskEvent.ASSIGNED)

    def revoke(self, task: ConnectorTaskId, cause: str) -> None:
        """`cause` as the ledger's `Stop` names it."""
        self._feed(task, TaskEvent.REVOKED, cause)

    def _feed(self, task: ConnectorTaskId, event: TaskEvent, cause: str = "revoked") -> None:
        phase = self.phases.get(task)
        if phase is None:
            return  # gone: no longer this worker's
        phase, commands = step(phase, event)
        if phase is TaskPhase.GONE:
            del self.phases[task]
        else:
            self.phases[task] = phase
        for command in commands:
            self._carry_out(task, command, cause)

    def _carry_out(self, task: ConnectorTaskId, command: TaskCommand, cause: str) -> None:
        match command:
            case TaskCommand.LAUNCH:
                self._running.add(task)
                self._ledger.start(task, self._worker)
                self._feed(task, TaskEvent.START_FINISHED)
            case TaskCommand.AWAIT_RELEASE:
                self._awaiting.add(task)
                self._ledger.when_released(task, self._worker, self._released)
            case TaskCommand.CANCEL_START if task in self._awaiting:
                self._awaiting.discard(task)
                self._ledger.forget_waiter(task, self._worker)
            case TaskCommand.STOP if task in self._running:
                self._running.discard(task)
                self._ledger.stop(task, self._worker, cause)
                self._feed(task, TaskEvent.STOP_FINISHED)
            case _:
                pass  # statuses and restart counts: not simulated

    def _released(self, task: Item) -> None:
        assert isinstance(task, ConnectorTaskId)
        self._awaiting.discard(task)
        self._feed(task, TaskEvent.RELEASED)
