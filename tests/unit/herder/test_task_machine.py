"""The task machine (`herder.tasks.task_machine`) alone: its table is whole and consistent, its
named rows do what they say, and random histories of events, carried out as the worker
carries them out, never run a task twice, never lose one, and never drop a restart or a
pause that arrives during a start."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from herder.tasks.task_machine import (
    IGNORED,
    PAUSE_DURING_START,
    RESTART_DURING_START,
    RESUME_DURING_PAUSE_PENDING,
    TRANSITIONS,
    IllegalTaskEvent,
    TaskCommand,
    TaskEvent,
    TaskPhase,
    step,
)


def test_every_pair_is_in_the_table_or_ignored_by_rule_or_refused() -> None:
    assert not set(TRANSITIONS) & set(IGNORED)
    refused = {
        (phase, event)
        for phase in TaskPhase
        for event in TaskEvent
        if (phase, event) not in TRANSITIONS and (phase, event) not in IGNORED
    }
    for phase, event in refused:
        with pytest.raises(IllegalTaskEvent, match=event.value):
            step(phase, event)
    assert (TaskPhase.RUNNING, TaskEvent.START_FINISHED) in refused
    assert (TaskPhase.RUNNING, TaskEvent.STOP_FINISHED) in refused


def test_an_ignored_event_changes_nothing() -> None:
    for phase, event in IGNORED:
        assert step(phase, event) == (phase, ())


def test_every_phase_but_gone_leaves_on_a_revocation_and_gone_is_final() -> None:
    for phase in TaskPhase:
        if phase is not TaskPhase.GONE:
            after, commands = step(phase, TaskEvent.REVOKED)
            assert after is TaskPhase.GONE and TaskCommand.SHOW_UNASSIGNED in commands
    assert not [pair for pair in TRANSITIONS if pair[0] is TaskPhase.GONE]


def test_a_restart_during_a_start_is_remembered_and_carried_out_when_it_ends() -> None:
    assert step(*RESTART_DURING_START) == (
        TaskPhase.RESTART_PENDING,
        (TaskCommand.SHOW_RESTARTING, TaskCommand.ABORT_START),
    )
    for end in (TaskEvent.START_FINISHED, TaskEvent.START_FAILED):
        assert step(TaskPhase.RESTART_PENDING, end) == (TaskPhase.STOPPING, (TaskCommand.STOP,))
    assert step(TaskPhase.STOPPING, TaskEvent.STOP_FINISHED) == (
        TaskPhase.STARTING,
        (TaskCommand.LAUNCH,),
    )


def test_a_pause_during_a_start_stops_the_task_when_it_ends() -> None:
    assert step(*PAUSE_DURING_START) == (TaskPhase.PAUSE_PENDING, ())
    assert step(TaskPhase.PAUSE_PENDING, TaskEvent.START_FINISHED) == (
        TaskPhase.PAUSED,
        (TaskCommand.STOP, TaskCommand.SHOW_PAUSED),
    )
    assert step(*RESUME_DURING_PAUSE_PENDING) == (TaskPhase.RESTART_PENDING, ())


# -- random histories ------------------------------------------------------------------


@dataclass
class Worker:
    """The task as `LocalWork` drives it: what the user wants (a config version, paused
    or not), what runs (a start under way, a held query), and every command checked as
    it is carried out. A stop is awaited before the next event, as the worker awaits it."""

    owned: bool = False
    paused: bool = False
    config: int = 0
    phase: TaskPhase = TaskPhase.NEW
    starting: int | None = None
    """The config version of the start under way."""
    waiting: bool = False
    held: int | None = None
    """The config version of the query held (running or failed)."""
    launched_at: int = -1
    asked_at: int = -1
    """When a restart, a config change or a resume last asked for a start."""
    now: int = 0
    shown: list[str] = field(default_factory=list)

    def feed(self, event: TaskEvent) -> None:
        self.now += 1
        self.phase, commands = step(self.phase, event)
        for command in commands:
            self.carry_out(command)
        if self.phase is TaskPhase.GONE:
            self.phase, self.owned = TaskPhase.NEW, False

    def carry_out(self, command: TaskCommand) -> None:
        match command:
            case TaskCommand.LAUNCH:
                assert self.owned and not self.paused, "a start of work not wanted"
                assert self.starting is None and self.held is None, "the task runs twice"
                self.starting, self.launched_at = self.config, self.now
            case TaskCommand.AWAIT_RELEASE:
                self.waiting = True
            case TaskCommand.ABORT_START:
                assert self.starting is not None, "an abort with no start under way"
            case TaskCommand.CANCEL_START:
                if self.starting is not None:
                    self.held = self.starting  # the runtime holds what it was starting
                self.starting, self.waiting = None, False
            case TaskCommand.STOP:
                self.held = None
                self.feed(TaskEvent.STOP_FINISHED)
            case _:
                self.shown.append(command.value)

    def act(self, action: str) -> None:
        match action:
            case "assign" | "hand over" if not self.owned:
                self.owned = True
                if self.paused:
                    self.feed(TaskEvent.PAUSED)
                elif action == "assign":
                    self.feed(TaskEvent.ASSIGNED)
                else:
                    self.feed(TaskEvent.ASSIGNED_AFTER_RELEASE)
            case "revoke" if self.owned:
                self.feed(TaskEvent.REVOKED)
            case "pause" if not self.paused:
                self.paused = True
                if self.owned:
                    self.feed(TaskEvent.PAUSED)
            case "resume" if self.paused:
                self.paused, self.asked_at = False, self.now
                if self.owned:
                    self.feed(TaskEvent.RESUMED)
            case "reconfigure":
                self.config += 1
                self.asked_at = self.now
                if self.owned:
                    self.feed(TaskEvent.CONFIG_CHANGED)
            case "restart" if self.owned:
                self.asked_at = self.now
                self.feed(TaskEvent.RESTART_REQUESTED)
            case "release" if self.waiting:
                self.waiting = False
                self.feed(TaskEvent.RELEASED)
            case "start ends" | "start fails" if self.starting is not None:
                self.held, self.starting = self.starting, None
                ok = action == "start ends"
                self.feed(TaskEvent.START_FINISHED if ok else TaskEvent.START_FAILED)
            case "query dies" | "fenced" if self.held is not None:
                died = action == "query dies"
                self.feed(TaskEvent.QUERY_DIED if died else TaskEvent.FENCED)
            case _:
                pass

    def settle(self) -> None:
        """Every start and wait under way ends well."""
        while self.waiting or self.starting is not None:
            self.act("release" if self.waiting else "start ends")


ACTIONS = [
    "assign",
    "hand over",
    "revoke",
    "pause",
    "resume",
    "reconfigure",
    "restart",
    "release",
    "start ends",
    "start fails",
    "query dies",
    "fenced",
]


def check_settled(worker: Worker) -> None:
    if not worker.owned or worker.paused:
        assert worker.held is None and worker.starting is None and not worker.waiting
        assert worker.phase is (TaskPhase.PAUSED if worker.owned else TaskPhase.NEW)
        return
    assert worker.phase in (TaskPhase.RUNNING, TaskPhase.FAILED), "the task was lost"
    assert worker.held == worker.config, "a config change was dropped"
    assert worker.launched_at >= worker.asked_at, "a restart was dropped"


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(ACTIONS), max_size=40))
def test_random_histories_never_run_a_task_twice_lose_it_or_drop_a_request(
    actions: list[str],
) -> None:
    worker = Worker()
    for action in actions:
        worker.act(action)
    worker.settle()
    check_settled(worker)


def test_a_restart_and_then_a_pause_during_one_start_end_paused() -> None:
    worker = Worker()
    for action in ("assign", "restart", "pause", "start ends"):
        worker.act(action)
    assert worker.phase is TaskPhase.PAUSED and worker.held is None
    assert worker.shown == ["show RESTARTING", "show PAUSED"]


def test_the_architecture_page_shows_the_table_the_code_runs() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "architecture.md").read_text()
    section = page.split("### A task's lifecycle", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("| ").split(" | ") for line in section.splitlines() if line.startswith("| ")]
    shown = {
        (TaskPhase(phase), TaskEvent(event)): (
            TaskPhase(after),
            tuple(TaskCommand(c) for c in commands.split(", ") if c != "(none)"),
        )
        for phase, event, after, commands in rows[1:]
    }
    assert shown == TRANSITIONS
