"""One task's life on this worker as one state machine: events in, commands out, no I/O.

What happens to a task this worker owns (it is assigned, handed over, paused, resumed,
restarted, reconfigured, revoked; its start ends; its query dies or is fenced; its stop
ends) arrives as a `TaskEvent`, and `TRANSITIONS` gives the next `TaskPhase` and what to
do, as `TaskCommand`s in the order they are carried out. `herder.tasks.task_work.TaskWork`
carries them out on the runtime (a Spark query), the simulator in tests/simulation on its
ledger: both run this table.

A start takes seconds under load, and anything may arrive during it; such an event is
never dropped: it moves the task to a phase that remembers it (`RESTART_PENDING`,
`PAUSE_PENDING`), and the start's end carries it out. Every pair not in `TRANSITIONS` is
either in `IGNORED`, stale by a rule its reason names, or refused (`IllegalTaskEvent`):
a bug in whoever drives the machine.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class TaskPhase(StrEnum):
    NEW = "new"
    """Owned, nothing started: its task config is not known yet."""
    AWAITING_RELEASE = "awaiting release"
    """Handed over in the round that revokes it elsewhere: starts once released."""
    STARTING = "starting"
    RESTART_PENDING = "restart pending"
    """Starting, and started again once that start ends (a restart or a new task config
    arrived during it)."""
    PAUSE_PENDING = "pause pending"
    """Starting, and stopped once that start ends (a pause arrived during it)."""
    RUNNING = "running"
    FAILED = "failed"
    """Its start or its query failed; held (its trace readable) until stopped."""
    STOPPING = "stopping"
    """Stopping, to start again."""
    PAUSED = "paused"
    GONE = "gone"
    """Revoked: no longer this worker's. Its record is dropped."""


class TaskEvent(StrEnum):
    ASSIGNED = "assigned"
    ASSIGNED_AFTER_RELEASE = "assigned, awaiting release"
    RELEASED = "released"
    """Its previous owner released it, or took longer than an owner may."""
    REVOKED = "revoked"
    CONFIG_CHANGED = "config changed"
    """Its task config is not the one it started with (or became known)."""
    PAUSED = "paused"
    RESUMED = "resumed"
    RESTART_REQUESTED = "restart requested"
    """By a user (REST) or by the automatic restart policy."""
    START_FINISHED = "start finished"
    START_FAILED = "start failed"
    QUERY_DIED = "query died"
    FENCED = "fenced"
    """Another worker's claim fenced its start or its query."""
    STOP_FINISHED = "stop finished"


class TaskCommand(StrEnum):
    LAUNCH = "launch"
    """Start the task in the background with its newest config; its end is an event."""
    AWAIT_RELEASE = "await release"
    """Wait in the background for the previous owner's release; its end is an event."""
    ABORT_START = "abort start"
    """Stop what the start under way holds, which ends that start (its end follows)."""
    CANCEL_START = "cancel start"
    """Cancel the start or the wait under way, and wait until it has ended."""
    STOP = "stop"
    """Stop the task's query, if one is held; STOP_FINISHED follows."""
    FORGET_RESTARTS = "forget restarts"
    """Count automatic restarts from zero."""
    GIVE_UP = "give up"
    """Rejoin at once, leaving the task to the worker that claimed it."""
    SHOW_PAUSED = "show PAUSED"
    SHOW_RESTARTING = "show RESTARTING"
    SHOW_UNASSIGNED = "show UNASSIGNED"


class IllegalTaskEvent(RuntimeError):
    """An event a task cannot receive in its phase: a bug in whoever drives the machine."""


Phase = TaskPhase
Event = TaskEvent
Do = TaskCommand
Row = tuple[TaskPhase, tuple[TaskCommand, ...]]

_STARTS: Final = (Phase.STARTING, Phase.RESTART_PENDING, Phase.PAUSE_PENDING)
"""The phases with a start under way."""
_HELD: Final = (Phase.RUNNING, Phase.FAILED)

RESTART_DURING_START: Final = (Phase.STARTING, Event.RESTART_REQUESTED)
"""A restart that arrives while the task starts ends that start (one that never ends is
not waited for) and starts the task again once it has ended. It was dropped once: a task
kept running on a file or link the user had changed."""
PAUSE_DURING_START: Final = (Phase.STARTING, Event.PAUSED)
"""A pause that arrives while the task starts stops it once that start ends (it was
ignored once: the task ran on, shown RUNNING, under a PAUSED connector)."""
RESUME_DURING_PAUSE_PENDING: Final = (Phase.PAUSE_PENDING, Event.RESUMED)
"""A resume after a pause during one start: the start under way read the config before
either, so the task starts once more after it (and is never left paused)."""

_REVOKE_START: Final = (Do.CANCEL_START, Do.STOP, Do.FORGET_RESTARTS, Do.SHOW_UNASSIGNED)

TRANSITIONS: Final[dict[tuple[TaskPhase, TaskEvent], Row]] = {
    (Phase.NEW, Event.ASSIGNED): (Phase.STARTING, (Do.LAUNCH,)),
    (Phase.NEW, Event.ASSIGNED_AFTER_RELEASE): (Phase.AWAITING_RELEASE, (Do.AWAIT_RELEASE,)),
    (Phase.NEW, Event.CONFIG_CHANGED): (Phase.STARTING, (Do.LAUNCH,)),
    (Phase.NEW, Event.PAUSED): (Phase.PAUSED, (Do.SHOW_PAUSED,)),
    (Phase.NEW, Event.REVOKED): (Phase.GONE, (Do.FORGET_RESTARTS, Do.SHOW_UNASSIGNED)),
    (Phase.AWAITING_RELEASE, Event.RELEASED): (Phase.STARTING, (Do.LAUNCH,)),
    (Phase.AWAITING_RELEASE, Event.PAUSED): (Phase.PAUSED, (Do.CANCEL_START, Do.SHOW_PAUSED)),
    (Phase.AWAITING_RELEASE, Event.REVOKED): (
        Phase.GONE,
        (Do.CANCEL_START, Do.FORGET_RESTARTS, Do.SHOW_UNASSIGNED),
    ),
    (Phase.STARTING, Event.START_FINISHED): (Phase.RUNNING, ()),
    (Phase.STARTING, Event.START_FAILED): (Phase.FAILED, ()),
    RESTART_DURING_START: (Phase.RESTART_PENDING, (Do.SHOW_RESTARTING, Do.ABORT_START)),
    (Phase.STARTING, Event.CONFIG_CHANGED): (Phase.RESTART_PENDING, ()),
    PAUSE_DURING_START: (Phase.PAUSE_PENDING, ()),
    (Phase.RESTART_PENDING, Event.START_FINISHED): (Phase.STOPPING, (Do.STOP,)),
    (Phase.RESTART_PENDING, Event.START_FAILED): (Phase.STOPPING, (Do.STOP,)),
    (Phase.RESTART_PENDING, Event.PAUSED): (Phase.PAUSE_PENDING, ()),
    (Phase.PAUSE_PENDING, Event.START_FINISHED): (Phase.PAUSED, (Do.STOP, Do.SHOW_PAUSED)),
    (Phase.PAUSE_PENDING, Event.START_FAILED): (Phase.PAUSED, (Do.STOP, Do.SHOW_PAUSED)),
    RESUME_DURING_PAUSE_PENDING: (Phase.RESTART_PENDING, ()),
    **{(start, Event.FENCED): (start, (Do.GIVE_UP,)) for start in _STARTS},
    **{(start, Event.REVOKED): (Phase.GONE, _REVOKE_START) for start in _STARTS},
    (Phase.RUNNING, Event.QUERY_DIED): (Phase.FAILED, ()),
    (Phase.RUNNING, Event.FENCED): (Phase.FAILED, (Do.GIVE_UP,)),
    (Phase.FAILED, Event.FENCED): (Phase.FAILED, (Do.GIVE_UP,)),
    **{
        (held, Event.RESTART_REQUESTED): (Phase.STOPPING, (Do.SHOW_RESTARTING, Do.STOP))
        for held in _HELD
    },
    **{
        (held, Event.CONFIG_CHANGED): (Phase.STOPPING, (Do.FORGET_RESTARTS, Do.STOP))
        for held in _HELD
    },
    **{(held, Event.PAUSED): (Phase.PAUSED, (Do.STOP, Do.SHOW_PAUSED)) for held in _HELD},
    **{
        (held, Event.REVOKED): (Phase.GONE, (Do.STOP, Do.FORGET_RESTARTS, Do.SHOW_UNASSIGNED))
        for held in _HELD
    },
    (Phase.STOPPING, Event.STOP_FINISHED): (Phase.STARTING, (Do.LAUNCH,)),
    (Phase.STOPPING, Event.PAUSED): (Phase.PAUSED, (Do.SHOW_PAUSED,)),
    (Phase.STOPPING, Event.REVOKED): (Phase.GONE, (Do.FORGET_RESTARTS, Do.SHOW_UNASSIGNED)),
    (Phase.PAUSED, Event.RESUMED): (Phase.STARTING, (Do.LAUNCH,)),
    (Phase.PAUSED, Event.REVOKED): (Phase.GONE, (Do.FORGET_RESTARTS, Do.SHOW_UNASSIGNED)),
}

IGNORED: Final[dict[tuple[TaskPhase, TaskEvent], str]] = {
    **{
        (phase, event): "nothing has started yet: the start to come reads the newest config"
        for phase in (Phase.NEW, Phase.AWAITING_RELEASE)
        for event in (Event.CONFIG_CHANGED, Event.RESTART_REQUESTED, Event.RESUMED)
        if (phase, event) != (Phase.NEW, Event.CONFIG_CHANGED)
    },
    **{(start, Event.QUERY_DIED): "the start's own end says how it went" for start in _STARTS},
    **{
        (start, Event.RESUMED): "not paused: the start under way goes on"
        for start in (Phase.STARTING, Phase.RESTART_PENDING)
    },
    **{
        (pending, event): "a start again is already due once the start under way ends"
        for pending in (Phase.RESTART_PENDING, Phase.STOPPING)
        for event in (Event.RESTART_REQUESTED, Event.CONFIG_CHANGED, Event.RESUMED)
    },
    **{
        (Phase.PAUSE_PENDING, event): "paused: the task stops once its start ends"
        for event in (Event.PAUSED, Event.RESTART_REQUESTED, Event.CONFIG_CHANGED)
    },
    (Phase.FAILED, Event.QUERY_DIED): "already failed",
    **{(held, Event.RESUMED): "not paused" for held in _HELD},
    **{
        (Phase.STOPPING, event): "the query it stops is no longer watched"
        for event in (Event.QUERY_DIED, Event.FENCED)
    },
    **{
        (Phase.PAUSED, event): "paused: nothing runs, and a resume starts the newest config"
        for event in (
            Event.PAUSED,
            Event.CONFIG_CHANGED,
            Event.RESTART_REQUESTED,
            Event.QUERY_DIED,
            Event.FENCED,
            Event.STOP_FINISHED,
        )
    },
    **{(Phase.GONE, event): "revoked: no longer this worker's" for event in TaskEvent},
}


def step(phase: TaskPhase, event: TaskEvent) -> Row:
    """The next phase and what to do, in order. An ignored event leaves the phase as it is
    and does nothing; a refused one raises `IllegalTaskEvent`."""
    row = TRANSITIONS.get((phase, event))
    if row is not None:
        return row
    if (phase, event) in IGNORED:
        return phase, ()
    raise IllegalTaskEvent(f"{event.value!r} while {phase.value!r}")
