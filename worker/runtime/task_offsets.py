"""A task's committed offsets as values: what the herder and REST speak of when they show,
alter or reset a connector's progress (Kafka Connect's offsets API, KIP-875).

Kept apart from the checkpoint I/O (`worker.runtime.checkpoint_offsets`) so that the
herder and REST can check and carry offsets without touching a checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_POSITION = 2**63 - 1
"""Java's `Long.MAX_VALUE`: Spark reads every position of our sources' offsets (Kafka
offsets, the generator's rows and timestamp, the file source's log offset) as a long."""


class OffsetsError(ValueError):
    """Offsets that cannot be applied to this checkpoint; the message says why."""


@dataclass(frozen=True)
class SourceOffset:
    """The committed end offset of one source of one task's query."""

    task: int
    source: int
    offset: Any


def check_offset(offset: object, where: str = "offset") -> None:
    """Raises `OffsetsError` unless `offset` has the shape of every source's offset here: a
    JSON object whose values are objects of the same kind or positions, integers from 0
    to `MAX_POSITION`. `where` names the offset in the message.

    Spark reads an altered offset only when the task restarts, so a position it cannot
    read (NaN, a fraction, a boolean, a string, a number beyond a long) would fail the
    task at every start, or resume it somewhere no batch ever ended.
    """
    if not isinstance(offset, dict):
        raise OffsetsError(
            f"{where} must be a JSON object, the source's own offset (got {_shown(offset)})"
        )
    for key, value in offset.items():
        if isinstance(value, dict):
            check_offset(value, f"{where}.{key}")
        elif not _is_position(value):
            raise OffsetsError(
                f"{where}.{key} must be an integer from 0 to {MAX_POSITION} (got {_shown(value)})"
            )


def _is_position(value: object) -> bool:
    """`True` is an int to Python, but no position to Spark."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_POSITION


def _shown(value: object) -> str:
    """`value` as JSON (`NaN`, `true`, `"12"`), cut short: it may be most of a body."""
    text = json.dumps(value)
    return text if len(text) <= 40 else f"{text[:40]}..."
