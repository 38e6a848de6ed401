"""The first line of a task's trace: the root cause, not the call that reported it.

A Spark failure reaches Python as a py4j wrapper whose own message names only the py4j
call (`An error occurred while calling o1074.start.`); what went wrong is at the end of
the Java cause chain (a `ParentNotDirectoryException`, say), dozens of lines further
down. The UI and `ctl` summarise a trace by its first line, so that line must be the root
cause's class and message; the full chain follows it unchanged.
"""

from __future__ import annotations

import contextlib
import traceback
from typing import Any, Final, Protocol

MAX_CHAIN: Final = 64
"""Links followed at most: Java forbids a throwable to be its own cause, not a loop."""
PYTHON_PROXY: Final = "An exception was raised by the Python Proxy. Return Message: "
"""How py4j's JVM side reports an error raised in a Python callback (a sink's
`foreachBatch` function), followed by the Python traceback as text."""


class JavaThrowable(Protocol):
    """What is read of a `java.lang.Throwable` through py4j (one call per link)."""

    def getCause(self) -> JavaThrowable | None: ...

    def toString(self) -> str: ...


def java_root_cause(throwable: JavaThrowable) -> str:
    """`<class>: <message>` of the innermost cause (Java's own `Throwable.toString`)."""
    current = throwable
    for _ in range(MAX_CHAIN):
        cause = current.getCause()
        if cause is None:
            break
        current = cause
    return current.toString()


def python_callback_error(java_root: str) -> str | None:
    """The Python exception a callback raised, when the JVM's root cause is py4j's report
    of one: the first exception line of the traceback it carries (a chain's first is the
    one it began with, as for Python's own errors)."""
    _, marker, traceback_text = java_root.partition(PYTHON_PROXY)
    if not marker:
        return None
    for line in traceback_text.splitlines():
        if line.strip() and not line[0].isspace() and not line.startswith("Traceback ("):
            return line
    return None


def innermost(error: BaseException) -> BaseException:
    """The exception the chain began with: the one Python prints first."""
    current = error
    for _ in range(MAX_CHAIN):
        inner = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
        if inner is None:
            break
        current = inner
    return current


def java_throwable(error: BaseException) -> Any:
    """The Java throwable behind a Python error, if any: py4j's `Py4JJavaError` has it
    as `java_exception`; PySpark's converted errors keep it as `_origin`, or only in
    their converted cause (a failed query's `StreamingQueryException`)."""
    for _ in range(MAX_CHAIN):
        found = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
        if found is not None:
            return found
        cause = getattr(error, "_cause", None)
        if not isinstance(cause, BaseException):
            return None
        error = cause
    return None


def root_cause_line(error: BaseException) -> str:
    """The root cause as one `<class>: <message>` text, Java's when there is one."""
    root = innermost(error)
    java = java_throwable(root)
    if java is not None:
        with contextlib.suppress(Exception):  # a JVM gone away: the Python side still tells
            java_root = java_root_cause(java)
            return python_callback_error(java_root) or java_root
    return traceback.format_exception_only(root)[-1].rstrip()


def with_root_cause_first(root_cause: str, trace: str) -> str:
    """`trace` led by `root_cause`, unless it already begins with it."""
    if trace.startswith(root_cause):
        return trace
    return f"{root_cause}\n{trace}"
