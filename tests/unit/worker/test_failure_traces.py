"""A task's trace leads with its root cause: the Java cause chain's last link when Spark
failed, the first exception of a Python chain otherwise; the full trace follows."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from worker.runtime.failure_traces import root_cause_line, with_root_cause_first
from worker.runtime.spark_queries import describe_failure

PY4J_MESSAGE = "An error occurred while calling o1074.start."


@dataclass
class FakeThrowable:
    """`java.lang.Throwable` as py4j shows it: `getCause()` and `toString()`."""

    text: str
    cause: FakeThrowable | None = None

    def getCause(self) -> FakeThrowable | None:
        return self.cause

    def toString(self) -> str:
        return self.text


class FakePy4JJavaError(Exception):
    """py4j's error: its message names the call, `java_exception` holds the throwable."""

    def __init__(self, java_exception: FakeThrowable) -> None:
        super().__init__(PY4J_MESSAGE)
        self.java_exception = java_exception


class FakeCapturedError(Exception):
    """PySpark's converted error of a failed query: the throwable only in its cause."""

    def __init__(self, cause: FakeCapturedError | None, origin: FakeThrowable | None) -> None:
        super().__init__("Query terminated with exception")
        self._cause = cause
        self._origin = origin


ROOT = "org.apache.hadoop.fs.ParentNotDirectoryException: /data/blocked (is not a directory)"
CHAIN = FakeThrowable(
    "java.io.IOException: cannot create /data/blocked/task-0",
    FakeThrowable("java.lang.RuntimeException: wrapped", FakeThrowable(ROOT)),
)


def raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:
        return caught


def test_a_py4j_error_leads_with_the_last_java_cause_then_the_whole_trace() -> None:
    trace = describe_failure(raised(FakePy4JJavaError(CHAIN)))

    first, rest = trace.split("\n", 1)
    assert first == ROOT
    assert rest.startswith("Traceback (most recent call last):")
    assert f"FakePy4JJavaError: {PY4J_MESSAGE}" in rest


def test_a_converted_spark_error_is_followed_to_its_java_throwable() -> None:
    error = FakeCapturedError(FakeCapturedError(None, CHAIN), None)

    assert root_cause_line(error) == ROOT


def test_an_error_raised_in_a_python_callback_leads_with_the_python_exception() -> None:
    refused = "worker.connectors.delta.sink.DeltaTableRefused: /data/t is not a Delta table"
    proxy = FakeThrowable(
        "py4j.Py4JException: An exception was raised by the Python Proxy. Return Message: "
        "Traceback (most recent call last):\n"
        '  File "/x/pyspark/sql/utils.py", line 120, in call\n'
        "    self.func(batch, batch_id)\n"
        f"{refused}\n  and its message's second line\n"
    )
    error = FakeCapturedError(FakeCapturedError(None, FakeThrowable("wrapped", proxy)), None)

    assert root_cause_line(error) == refused


def test_a_java_throwable_without_a_cause_is_its_own_root() -> None:
    assert root_cause_line(FakePy4JJavaError(FakeThrowable(ROOT))) == ROOT


def test_a_python_chain_leads_with_the_exception_it_began_with() -> None:
    def fail() -> None:
        try:
            raise FileNotFoundError("no /data/in")
        except FileNotFoundError as exc:
            raise RuntimeError("the task could not start") from exc

    with pytest.raises(RuntimeError) as info:
        fail()
    trace = describe_failure(info.value)

    first, rest = trace.split("\n", 1)
    assert first == "FileNotFoundError: no /data/in"
    assert rest.rstrip().endswith("RuntimeError: the task could not start")


def test_a_jvm_that_does_not_answer_leaves_the_python_root_cause() -> None:
    class GoneThrowable(FakeThrowable):
        def getCause(self) -> FakeThrowable | None:
            raise ConnectionError("the JVM has gone")

    error = FakePy4JJavaError(GoneThrowable("x"))

    assert root_cause_line(error) == f"{__name__}.FakePy4JJavaError: {PY4J_MESSAGE}"


def test_a_trace_that_already_leads_with_its_root_cause_is_kept_as_it_is() -> None:
    assert describe_failure(ValueError("output.format: invalid value 'avro'")) == (
        "ValueError: output.format: invalid value 'avro'"
    )
    assert with_root_cause_first("A: b", "A: b\nmore") == "A: b\nmore"
