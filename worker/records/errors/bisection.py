"""Which records of a batch make a query fail, found by bisection.

Spark has no per-row try: a query over a batch either runs or fails with the first
failing row's error, without saying which row. So the batch is cut in halves by offset
ranges, each half evaluated on its own, and only failing halves cut again, down to
single offsets; each single offset that fails is a failed record, with its own error.
With k failing records among n, that is about 2·k·log2(n/k) evaluations, each a Spark
job over the (cached) batch; a batch without failures costs none.

Pure: the evaluation is a callback, so the planner is tested without Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

Part = tuple["OffsetRange", ...]
E = TypeVar("E")


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Offsets [start, end) of one Kafka partition (some offsets may hold no record)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def split(part: Part) -> tuple[Part, Part]:
    """Two halves: by ranges when there are several, else by offsets."""
    if len(part) > 1:
        middle = len(part) // 2
        return part[:middle], part[middle:]
    (whole,) = part
    middle = whole.start + whole.size // 2
    left = OffsetRange(whole.topic, whole.partition, whole.start, middle)
    right = OffsetRange(whole.topic, whole.partition, middle, whole.end)
    return (left,), (right,)


def isolate_failures(
    part: Part,
    attempt: Callable[[Part], E | None],
    error: E | None = None,
    *,
    must_fail: bool = False,
    limit: int | None = None,
) -> list[tuple[OffsetRange, E]]:
    """Every single offset of `part` whose evaluation alone fails, with its error.

    `attempt` evaluates a part and returns its error, or None when it runs; `error` is
    the error of `part` itself when the caller has seen it. When the left half runs, the
    right one is not evaluated whole (`must_fail`: the failure is in it), only its
    halves are, which saves one evaluation per level. A part that fails only as a whole
    (a query that is not row by row) ends with no single offset found, which the caller
    reports rather than dropping records. With `limit`, it stops once it found that
    many (naming one failing record needs only one).
    """
    if error is None and (not must_fail or _single(part)):
        error = attempt(part)
        if error is None:
            return []
    if _single(part):
        assert error is not None
        return [(part[0], error)]
    left, right = split(part)
    left_error = attempt(left)
    found = (
        isolate_failures(left, attempt, left_error, limit=limit) if left_error is not None else []
    )
    if limit is not None and len(found) >= limit:
        return found
    rest = None if limit is None else limit - len(found)
    return found + isolate_failures(right, attempt, must_fail=left_error is None, limit=rest)


def _single(part: Part) -> bool:
    return len(part) == 1 and part[0].size == 1


def whole_batch(ranges: Sequence[OffsetRange]) -> Part:
    """A batch's ranges, in a stable order (the plan, and so its cost, is reproducible)."""
    return tuple(sorted(r for r in ranges if r.size > 0))
