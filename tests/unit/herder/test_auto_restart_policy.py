"""The automatic-restart policy on its own (`herder.tasks.auto_restart`), against a clock the
tests move; and where its settings come from: the worker config and the connector's."""

from __future__ import annotations

from pathlib import Path

import pytest

from herder.tasks.auto_restart import Outcome, RestartPolicy, RestartTracker, is_fenced
from protocol.messages import ConnectorTaskId
from sparkherd.service import restart_policy
from tests.support.plugins import plugins_for
from worker.admission.registry import PluginRegistry
from worker.config import WorkerConfig
from worker.config.errors import ConfigError
from worker.connectors import BUILTIN_CONNECTORS
from worker.plugins.api import ConnectorConfigError
from worker.plugins.task_state import TaskState
from worker.runtime.spark_queries import TaskFencedError

TASK = ConnectorTaskId("orders", 0)
POLICY = RestartPolicy(enabled=True, max_attempts=3, initial_backoff_ms=1_000, max_backoff_ms=3_000)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def restart_when_due(tracker: RestartTracker, clock: Clock) -> list[object]:
    wait = tracker.next_due_in()
    assert wait is not None, "nothing scheduled"
    clock.now += wait
    return list(tracker.take_due())


def test_the_back_off_doubles_up_to_its_cap() -> None:
    assert [POLICY.delay_s(n) for n in range(1, 6)] == [1.0, 2.0, 3.0, 3.0, 3.0]
    assert RestartPolicy().delay_s(1) == 5.0 and RestartPolicy().delay_s(6) == 60.0
    assert RestartPolicy().delay_s(2**31 - 1) == 60.0, "no overflow, no endless power"


def test_failures_are_restarted_until_the_attempts_run_out() -> None:
    clock = Clock()
    tracker = RestartTracker(clock)
    first = tracker.failed(TASK, POLICY, "boom")
    assert (first.outcome, first.failed_attempt, first.delay_s) == (Outcome.SCHEDULED, 0, 1.0)
    assert first.restart_at == clock.now + 1.0
    assert tracker.take_due() == [], "not due yet"
    delays = []
    for attempt in (1, 2, 3):
        assert restart_when_due(tracker, clock) == [TASK]
        assert tracker.attempts(TASK) == attempt
        tracker.reported(TASK, TaskState.RESTARTING)
        verdict = tracker.failed(TASK, POLICY, "boom")
        assert verdict.failed_attempt == attempt
        delays.append(verdict.delay_s)
    assert verdict.outcome is Outcome.EXHAUSTED and tracker.next_due_in() is None
    assert delays[:2] == [2.0, 3.0] and tracker.begun == 3


def test_the_trace_says_which_attempt_failed_and_when_the_next_runs() -> None:
    clock = Clock()
    tracker = RestartTracker(clock)
    note = tracker.failed(TASK, POLICY, "boom").appended_to("boom", TASK)
    assert note == (
        "boom\nThe task failed; automatic restart 1 of 3 at 2023-11-14T22:13:21.000+00:00 (in 1 s)."
    )
    restart_when_due(tracker, clock)
    second = tracker.failed(TASK, POLICY, "boom").note(TASK)
    assert second is not None and second.startswith(
        "Automatic restart 1 of 3 failed; automatic restart 2 of 3 at 2023-11-14T22:13:23.000"
    )
    for _ in range(2):
        restart_when_due(tracker, clock)
        last = tracker.failed(TASK, POLICY, "boom")
    assert last.note(TASK) == (
        "Automatic restart 3 of 3 failed; the task stays FAILED until it is restarted "
        "manually (POST /connectors/orders/tasks/0/restart)."
    )
    connector = tracker.failed("orders", POLICY, "bad config").note("orders")
    assert connector is not None and connector.startswith("The connector failed; automatic")


def test_a_run_that_lasts_the_longest_back_off_resets_the_count() -> None:
    clock = Clock()
    tracker = RestartTracker(clock)
    tracker.failed(TASK, POLICY, "boom")
    restart_when_due(tracker, clock)
    tracker.reported(TASK, TaskState.RUNNING)
    clock.now += 2.9
    assert tracker.failed(TASK, POLICY, "boom").failed_attempt == 1, "too short a run"
    restart_when_due(tracker, clock)
    tracker.reported(TASK, TaskState.RUNNING)
    clock.now += 3.0
    verdict = tracker.failed(TASK, POLICY, "boom")
    assert (verdict.failed_attempt, verdict.delay_s) == (0, 1.0), "a success starts over"


def test_a_run_interrupted_by_another_state_does_not_count_as_a_success() -> None:
    clock = Clock()
    tracker = RestartTracker(clock)
    tracker.failed(TASK, POLICY, "boom")
    restart_when_due(tracker, clock)
    tracker.reported(TASK, TaskState.RUNNING)
    clock.now += 2.0
    tracker.reported(TASK, TaskState.PAUSED)
    tracker.reported(TASK, TaskState.RUNNING)
    clock.now += 2.0
    assert tracker.failed(TASK, POLICY, "boom").failed_attempt == 1


def test_another_state_calls_a_pending_restart_off_and_forgetting_resets_the_count() -> None:
    clock = Clock()
    tracker = RestartTracker(clock)
    tracker.failed(TASK, POLICY, "boom")
    tracker.reported(TASK, TaskState.PAUSED)
    assert tracker.next_due_in() is None
    tracker.failed(TASK, POLICY, "boom")
    restart_when_due(tracker, clock)
    tracker.forget(TASK)
    assert tracker.attempts(TASK) == 0
    assert tracker.failed(TASK, POLICY, "boom").failed_attempt == 0


def test_a_fenced_task_is_not_restarted_and_a_disabled_policy_restarts_nothing() -> None:
    tracker = RestartTracker(Clock())
    fenced = tracker.failed(TASK, POLICY, str(TaskFencedError(TASK, "other:8083 in gen 7")))
    assert fenced.outcome is Outcome.FENCED and tracker.next_due_in() is None
    assert fenced.note(TASK) == (
        "Not restarted automatically: another worker has claimed the task."
    )
    disabled = tracker.failed(TASK, RestartPolicy(enabled=False), "boom")
    assert disabled.outcome is Outcome.DISABLED and disabled.appended_to("boom", TASK) == "boom"
    assert tracker.next_due_in() is None


def test_the_fencing_mark_matches_the_runtimes_message_also_inside_a_traceback() -> None:
    message = str(TaskFencedError(TASK, "w2"))
    assert is_fenced(message)
    assert is_fenced(f"Traceback ...\nworker.runtime.spark_queries.TaskFencedError: {message}")
    assert not is_fenced("java.io.IOException: disk full") and not is_fenced(None)


def test_a_task_whose_checkpoint_does_not_fit_is_not_restarted_and_told_how_to_start_over() -> None:
    """A re-created connector with another output.path failed at every restart with Spark's
    BATCH_METADATA_NOT_FOUND, and was restarted forever (issue 29, item 2)."""
    tracker = RestartTracker(Clock())
    trace = "... [BATCH_METADATA_NOT_FOUND] Unable to find batch file:/b/task-0/_spark_metadata/0"
    verdict = tracker.failed(TASK, POLICY, trace)
    assert verdict.outcome is Outcome.UNFIT_CHECKPOINT and tracker.next_due_in() is None
    note = verdict.note(TASK)
    assert note is not None and note.startswith("Not restarted automatically: ")
    for step in (
        "PUT /connectors/orders/stop",
        "DELETE /connectors/orders/offsets",
        "another name",
    ):
        assert step in note
    assert tracker.failed("orders", POLICY, trace).outcome is Outcome.SCHEDULED, "a connector"


def test_the_earliest_due_restart_comes_first() -> None:
    clock = Clock()
    tracker = RestartTracker(clock)
    slow = RestartPolicy(initial_backoff_ms=2_000, max_backoff_ms=2_000)
    tracker.failed(TASK, slow, "boom")
    tracker.failed("orders", POLICY, "bad")
    assert tracker.next_due_in() == 1.0
    clock.now += 5
    assert tracker.take_due() == ["orders", TASK]
    assert tracker.take_due() == []


def test_a_connector_overrides_the_worker_policy_key_by_key() -> None:
    worker = RestartPolicy()
    own = worker.for_connector({"connector.class": "generator", "auto.restart.max.attempts": "9"})
    assert own == RestartPolicy(max_attempts=9)
    off = worker.for_connector({"auto.restart.enabled": "false"})
    assert off == RestartPolicy(enabled=False)
    assert worker.for_connector({"auto.restart.max.attempts": "${file:/s:n}"}) == worker


def test_the_worker_settings_default_to_on_five_seconds_doubling_to_a_minute_five_times() -> None:
    assert restart_policy(WorkerConfig()) == RestartPolicy(
        enabled=True, max_attempts=5, initial_backoff_ms=5_000, max_backoff_ms=60_000
    )
    set_ = WorkerConfig(
        **{
            "auto.restart.enabled": "false",
            "auto.restart.max.attempts": "2",
            "auto.restart.initial.backoff.ms": "100",
            "auto.restart.max.backoff.ms": "400",
        }
    )
    assert restart_policy(set_) == RestartPolicy(False, 2, 100, 400)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("auto.restart.enabled", "maybe", "'auto.restart.enabled' must be 'true' or 'false'"),
        ("auto.restart.max.attempts", "0", "'auto.restart.max.attempts' must be an integer"),
        ("auto.restart.initial.backoff.ms", "99", "between 100 and 2147483647 (got '99')"),
        (
            "auto.restart.initial.backoff.ms",
            "70000",
            "'auto.restart.initial.backoff.ms' must not be more than "
            "'auto.restart.max.backoff.ms' (got 70000 > 60000)",
        ),
    ],
)
def test_bad_worker_settings_name_the_key(key: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        WorkerConfig(**{key: value})


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"auto.restart.enabled": "maybe"}, "auto.restart.enabled: invalid value 'maybe'"),
        (
            {"auto.restart.max.attempts": "0"},
            "auto.restart.max.attempts: invalid value '0': Input should be greater than or "
            "equal to 1",
        ),
        (
            {"auto.restart.max.backoff.ms": "soon"},
            "auto.restart.max.backoff.ms: invalid value 'soon': Input should be a valid integer",
        ),
        (
            {"auto.restart.initial.backoff.ms": "5000", "auto.restart.max.backoff.ms": "1000"},
            "auto.restart.initial.backoff.ms: 5000 is more than auto.restart.max.backoff.ms (1000)",
        ),
    ],
)
def test_a_connector_with_bad_auto_restart_settings_is_refused_naming_the_key(
    tmp_path: Path, overrides: dict[str, str], expected: str
) -> None:
    plugins = plugins_for(PluginRegistry(BUILTIN_CONNECTORS), tmp_path / "checkpoints")
    config = {"connector.class": "generator", "output.path": str(tmp_path / "out"), **overrides}
    with pytest.raises(ConnectorConfigError) as refused:
        plugins.admit(config, {})
    assert expected in str(refused.value)


def test_a_connector_with_good_auto_restart_settings_is_admitted(tmp_path: Path) -> None:
    plugins = plugins_for(PluginRegistry(BUILTIN_CONNECTORS), tmp_path / "checkpoints")
    plugins.admit(
        {
            "connector.class": "generator",
            "output.path": str(tmp_path / "out"),
            "auto.restart.enabled": "true",
            "auto.restart.max.attempts": "10",
            "auto.restart.initial.backoff.ms": "500",
            "auto.restart.max.backoff.ms": "500",
        },
        {},
    )
