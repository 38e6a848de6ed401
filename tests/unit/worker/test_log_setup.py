from __future__ import annotations

import json
import logging

from protocol.messages import ConnectorTaskId
from worker.runtime.log_setup import (
    PY4J_CALLBACKS,
    TEXT_FORMAT,
    JsonFormatter,
    RepeatFilter,
    TextFormatter,
    quiet_libraries,
    working_on,
)
from worker.runtime.spark_session import with_quiet_spark_log


def record(name: str, message: str, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, None, None)


def test_a_repeated_line_is_dropped_until_the_quiet_period_is_over() -> None:
    now = [0.0]
    repeats = RepeatFilter(quiet_s=30.0, clock=lambda: now[0])
    assert repeats.filter(record("aiokafka", "Unable connect to node 1"))
    now[0] = 29.0
    assert not repeats.filter(record("aiokafka", "Unable connect to node 1"))
    assert repeats.filter(record("aiokafka", "Unable connect to node 2"))
    assert repeats.filter(record("herder", "Unable connect to node 1"))
    now[0] = 30.5
    assert repeats.filter(record("aiokafka", "Unable connect to node 1"))


def test_an_event_below_warning_is_never_dropped_as_a_repeat() -> None:
    """A task restarted within the quiet period says again that it is running."""
    repeats = RepeatFilter(quiet_s=30.0, clock=lambda: 0.0)
    running = record("worker.runtime", "Task gen-0 is running", logging.INFO)
    assert repeats.filter(running) and repeats.filter(running)


def test_a_json_line_names_the_task_it_is_about() -> None:
    formatter = JsonFormatter()
    about = logging.LogRecord(
        "worker", logging.ERROR, __file__, 1, "Task %s failed", (ConnectorTaskId("gen", 2),), None
    )
    line = json.loads(formatter.format(about))
    assert line.pop("time").endswith("+00:00")
    assert line == {
        "level": "ERROR",
        "logger": "worker",
        "message": "Task gen-2 failed",
        "connector": "gen",
        "task": 2,
    }
    with working_on("files"):
        line = json.loads(formatter.format(record("herder", "starting")))
    assert (line["connector"], "task" in line) == ("files", False)
    assert "connector" not in json.loads(formatter.format(record("herder", "joined")))


def test_text_and_json_lines_stamp_time_as_statuses_do_in_utc_iso_8601() -> None:
    line = record("herder", "joined")
    line.created = 1_700_000_000.25
    assert TextFormatter(TEXT_FORMAT).format(line) == (
        "2023-11-14T22:13:20.250+00:00 ERROR herder: joined"
    )
    assert json.loads(JsonFormatter().format(line))["time"] == "2023-11-14T22:13:20.250+00:00"


def test_the_quiet_spark_log_is_used_unless_one_is_given() -> None:
    quiet = with_quiet_spark_log({"spark.driver.extraJavaOptions": "-Xss4m"}, "json")
    options = quiet["spark.driver.extraJavaOptions"]
    assert options.startswith("-Xss4m -Dlog4j2.configurationFile=")
    assert options.endswith("spark_log4j2_json.properties")
    own = {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/mine.properties"}
    assert with_quiet_spark_log(own) == own


def test_spark_callbacks_do_not_log_the_traces_the_runtime_reports_itself() -> None:
    quiet_libraries()
    assert not logging.getLogger(PY4J_CALLBACKS).isEnabledFor(logging.ERROR)
    assert not logging.getLogger("py4j.java_gateway").isEnabledFor(logging.INFO)
    assert logging.getLogger("py4j.java_gateway").isEnabledFor(logging.WARNING)
