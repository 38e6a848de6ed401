"""Process-wide logging: one format, and no flood while the broker is away.

When the broker goes down, every Kafka client in the worker (config, status, group)
reports the same failure several times a second; repeating one line that often buries
the lines that matter (fencing, rejoining), so a message already printed within the
quiet period is dropped.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

REPEAT_QUIET_S = 30.0


class RepeatFilter(logging.Filter):
    """Drops a record whose logger and message were already let through recently."""

    def __init__(
        self, quiet_s: float = REPEAT_QUIET_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._quiet_s = quiet_s
        self._clock = clock
        self._last_seen: dict[tuple[str, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.getMessage())
        now = self._clock()
        last = self._last_seen.get(key)
        if last is not None and now - last < self._quiet_s:
            return False
        if len(self._last_seen) > 10_000:
            self._last_seen.clear()
        self._last_seen[key] = now
        return True


def configure_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RepeatFilter())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
