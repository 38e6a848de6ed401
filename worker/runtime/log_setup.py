"""Process-wide logging: one format (text, or JSON lines for a log pipeline), and no
flood while the broker is away.

When the broker goes down, every Kafka client in the worker (config, status, group)
reports the same failure several times a second; repeating one line that often buries
the lines that matter (fencing, rejoining), so a warning or error already printed within
the quiet period is dropped. Lines below WARNING are events, never a flood, and each is
kept: a task restarted within the period logs that it is running again.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Literal

from protocol.messages import ConnectorTaskId

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
PY4J_CALLBACKS = "py4j.clientserver"
"""Logs, as an ERROR with the whole trace, every exception a Python callback of Spark's
raises: each batch a file-writing task's `foreachBatch` hands over (its stop interrupts
one in flight every time). The exception fails the query all the same, and the runtime
reports that failure once, in the task's trace, with secrets masked, which this line
would not be."""

_working_on: ContextVar[str | ConnectorTaskId | None] = ContextVar("working_on", default=None)


@contextmanager
def working_on(work: str | ConnectorTaskId) -> Iterator[None]:
    """Log lines written meanwhile (in this task, and threads it starts with
    `asyncio.to_thread`) are about `work`, a connector or a task."""
    token = _working_on.set(work)
    try:
        yield
    finally:
        _working_on.reset(token)


REPEAT_QUIET_S = 30.0


class RepeatFilter(logging.Filter):
    """Drops a warning or error whose logger and message were already let through
    recently."""

    def __init__(
        self, quiet_s: float = REPEAT_QUIET_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._quiet_s = quiet_s
        self._clock = clock
        self._last_seen: dict[tuple[str, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.getMessage())
        now = self._clock()
        last = self._last_seen.get(key)
        if last is not None and now - last < self._quiet_s:
            return False
        if len(self._last_seen) > 10_000:
            self._last_seen.clear()
        self._last_seen[key] = now
        return True


def utc_iso(seconds: float) -> str:
    """A moment as statuses, `ctl` and `/ui` show it: UTC ISO 8601 to the millisecond, so
    one log line, one task's `started_at` and one page can be read side by side."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


class TextFormatter(logging.Formatter):
    """`TEXT_FORMAT`, its time in UTC ISO 8601 (logging's own is local and unzoned)."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return utc_iso(record.created)


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the connector and task the line is about: the one
    being worked on, else a task among the message's arguments."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": utc_iso(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        work = _working_on.get() or _task_among(record.args)
        if isinstance(work, ConnectorTaskId):
            entry["connector"], entry["task"] = work.connector, work.task
        elif work is not None:
            entry["connector"] = work
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def _task_among(args: object) -> ConnectorTaskId | None:
    values = args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else ()
    return next((value for value in values if isinstance(value, ConnectorTaskId)), None)


def configure_logging(log_format: LogFormat = "text") -> None:
    """Called at start with the default, and again once the config says which format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter(TEXT_FORMAT))
    handler.addFilter(RepeatFilter())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    quiet_libraries()


def quiet_libraries() -> None:
    """The libraries' routine lines off: what a worker's log says is its own."""
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    logging.getLogger(PY4J_CALLBACKS).setLevel(logging.CRITICAL)
