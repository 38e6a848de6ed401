"""What `sparkherd ctl` prints for people: tables, descriptions, and untrusted answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sparkherd.ctl import views
from sparkherd.ctl.tables import clean, fields, table

STATUS = {
    "name": "demo",
    "connector": {"state": "RUNNING", "worker_id": "w1:8083"},
    "tasks": [
        {"id": 0, "state": "RUNNING", "worker_id": "w1:8083", "started_at": "2025-01-01T00:00"},
        {"id": 1, "state": "FAILED", "worker_id": "w2:8083", "trace": "Boom\n  at line 3"},
    ],
    "type": "source",
}
INFO = {
    "name": "demo",
    "config": {"connector.class": "generator", "tasks.max": "2"},
    "tasks": [{"connector": "demo", "task": 0}, {"connector": "demo", "task": 1}],
    "type": "source",
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def test_a_table_aligns_columns_without_trailing_spaces() -> None:
    rendered = table(("name", "state"), [("a", "RUNNING"), ("longer-name", None)])
    assert rendered.splitlines() == [
        "NAME          STATE",
        "a             RUNNING",
        "longer-name   -",
    ]
    assert fields([("Name", "x"), ("Worker", None)]).splitlines() == ["Name:    x", "Worker:  -"]


def test_clean_escapes_what_could_rewrite_a_terminal() -> None:
    assert clean("red\x1b[31m\x07") == "red\\x1b[31m\\x07"
    assert clean("a\nb\tc") == "a b c"
    assert clean("a\nb", multiline=True) == "a\nb"
    assert clean("\u202eevil\u2028") == "\\u202eevil\\u2028"
    assert clean({"b": 1, "a": [True, None]}) == '{"a":[true,null],"b":1}'
    assert (clean(None), clean(3), clean(False)) == ("", "3", "false")


def test_connectors_table_counts_task_states() -> None:
    answer = {"demo": {"status": STATUS, "info": INFO}, "idle": {"status": {"tasks": []}}}
    lines = views.connectors_table(answer).splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "CLASS", "STATE", "TASKS"]
    assert lines[1].split() == [
        "demo",
        "source",
        "generator",
        "RUNNING",
        "(1",
        "of",
        "2",
        "tasks",
        "FAILED)",
        "1",
        "RUNNING,",
        "1",
        "FAILED",
    ]
    assert lines[2].split() == ["idle", "-", "-", "-", "-"]
    assert views.connectors_table({}) == "no connectors"
    assert "plain" in views.connectors_table(["plain"]), "a server that ignores expand"


def test_a_connector_state_says_how_many_of_its_tasks_failed() -> None:
    def status(connector: str | None, *tasks: str) -> dict[str, Any]:
        return {"connector": {"state": connector}, "tasks": [{"state": t} for t in tasks]}

    assert views.connector_state(status("RUNNING", "FAILED")) == "RUNNING (1 of 1 task FAILED)"
    assert views.connector_state(status("PAUSED", "PAUSED", "FAILED", "FAILED")) == (
        "PAUSED (2 of 3 tasks FAILED)"
    )
    assert views.connector_state(status("RUNNING", "RUNNING", "UNASSIGNED")) == "RUNNING"
    assert views.connector_state(status("STOPPED")) == "STOPPED"
    assert views.connector_state(status(None, "FAILED")) == "(1 of 1 task FAILED)"
    assert views.connector_state("garbage") == ""


def test_describe_shows_config_tasks_workers_and_traces() -> None:
    text = views.describe_connector(INFO, STATUS)
    assert "State:   RUNNING (1 of 2 tasks FAILED)" in text and "Worker:  w1:8083" in text
    assert "connector.class   generator" in text
    assert any(line.split()[:3] == ["1", "FAILED", "w2:8083"] for line in text.splitlines())
    assert "Task 1 trace:\n  Boom\n    at line 3" in text
    assert views.describe_json(INFO, STATUS) == {
        "name": "demo",
        "type": "source",
        "config": INFO["config"],
        "connector": STATUS["connector"],
        "tasks": STATUS["tasks"],
    }


def test_workers_view_marks_the_leader() -> None:
    answer = {
        "leader": "http://w1:8083",
        "generation": 4,
        "protocol_version": 2,
        "scheduled_rebalance_ms": 0,
        "workers": [
            {"id": "w1:8083", "url": "http://w1:8083", "connectors": ["a"], "tasks": ["a-0"]},
            {
                "id": "w2:8083",
                "url": "http://w2:8083",
                "connectors": [],
                "tasks": [],
                "state": "running",
            },
        ],
    }
    lines = views.workers_view(answer).splitlines()
    assert "Protocol:             2 (cooperative)" in lines
    assert lines[-2].split() == ["w1:8083", "http://w1:8083", "leader", "-", "1", "1"]
    assert lines[-1].split() == ["w2:8083", "http://w2:8083", "-", "running", "0", "0"]


def test_plugins_offsets_and_loggers() -> None:
    plugins = [{"class": "x.Generator", "type": "source", "version": "0.1.0", "alias": "gen"}]
    lines = views.plugins_table(plugins).splitlines()
    assert lines[0].split() == ["ALIAS", "CLASS", "TYPE", "VERSION"]
    assert lines[1].split() == ["gen", "x.Generator", "source", "0.1.0"]
    offsets = {"offsets": [{"partition": {"task": 0, "source": 0}, "offset": {"offset": 5}}]}
    row = views.offsets_table("demo", offsets).splitlines()[1].split()
    assert row == ['{"source":0,"task":0}', '{"offset":5}']
    assert views.offsets_table("demo", {"offsets": []}) == "connector demo has no offsets"
    loggers = {
        "root": {"level": "INFO", "last_modified": None},
        "herder": {"level": "DEBUG", "last_modified": 0},
    }
    lines = views.loggers_table(loggers).splitlines()
    assert lines[1].split() == ["herder", "DEBUG", "1970-01-01T00:00:00.000+00:00"]
    assert lines[2].split() == ["root", "INFO", "-"]


def test_restart_and_logger_outcomes() -> None:
    plan = {"connector": {"state": "RUNNING"}, "tasks": [{"id": 1, "state": "RESTARTING"}]}
    assert views.restart_outcome("demo", plan) == "connector demo: restarting task 1"
    assert views.restart_outcome("demo", {}) == "connector demo: nothing to restart"
    assert "changed: herder, herder.tasks.work" in views.loggers_changed(
        "herder", "DEBUG", ["herder", "herder.tasks.work"]
    )
    assert "already" in views.loggers_changed("herder", "DEBUG", [])


@given(json_values, json_values)
def test_any_answer_renders_without_crashing(first: Any, second: Any) -> None:
    for rendered in (
        views.connectors_table(first),
        views.workers_view(first),
        views.plugins_table(first),
        views.offsets_table("x", first),
        views.loggers_table(first),
        views.describe_connector(first, second),
        views.restart_outcome("x", first),
        views.loggers_changed("x", "INFO", first),
        clean(first, multiline=True),
    ):
        assert isinstance(rendered, str)
        assert "\x1b" not in rendered
    views.describe_json(first, second)
