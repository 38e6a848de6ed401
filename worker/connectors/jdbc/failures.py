"""What kafka-to-jdbc does when PostgreSQL refuses a write: which errors are a record's,
which may pass, and how the records at fault are found.

A record's error is one the server reports in SQLSTATE class 22 (data exception: a
value that does not convert to the column's type, a string too long, a number out of
range) or 23 (integrity constraint violation: NOT NULL, CHECK, UNIQUE, FOREIGN KEY).
PostgreSQL does not say which of the rows of a statement it failed on in any form a
program can rely on, so the batch's rows are applied in parts, each under a savepoint: a
part that fails is rolled back and split in two, down to single rows; the parts that
succeed stay. Applying the halves in order keeps the batch's meaning (a row that clashes
with an earlier row of the same batch is the one found), and costs about 2·k·log2(n/k)
statements for k failing rows among n.

An error that may pass (the connection lost, the server shutting down or starting up,
a serialization failure or deadlock between concurrent writers, too many connections) is
retried `max.retries` times, `retry.backoff.ms` apart, as Confluent's sink retries; any
other (a missing privilege, a table changed under the task, a wrong password) fails the
task at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

RECORD_ERROR_CLASSES: Final = ("22", "23")
TRANSIENT_CLASSES: Final = ("08", "40", "53", "57P")
"""Connection exceptions, transaction rollbacks (serialization, deadlock), insufficient
resources, and the operator's interventions (admin, crash shutdown, cannot connect now)."""
_PERMANENT_CONNECT_FAILURES: Final = (
    "password authentication failed",
    "no password supplied",
    "does not exist",
    "no pg_hba.conf entry",
    "permission denied",
    "invalid",
    "unsupported",
    "authentication method requirement",
    "the worker's environment sets",
)
"""Phrases of libpq's refusals to connect that no retry changes (a server that asks for
what `login_policy` refuses; a worker environment that libpq would act on)."""

E = TypeVar("E")


def is_record_error(sqlstate: str | None) -> bool:
    return sqlstate is not None and sqlstate.startswith(RECORD_ERROR_CLASSES)


def is_transient(sqlstate: str | None, message: str) -> bool:
    """Whether trying again later may succeed. A failure to connect has no SQLSTATE
    (libpq's own), so its message says: a refused or timed-out connection, a server
    shutting down or starting up may pass; a refused login does not."""
    if sqlstate is not None:
        return sqlstate.startswith(TRANSIENT_CLASSES)
    lowered = message.lower()
    return not any(phrase in lowered for phrase in _PERMANENT_CONNECT_FAILURES)


def apply_in_parts(
    count: int,
    part_size: int,
    attempt: Callable[[int, int], E | None],
    limit: int | None = None,
) -> list[tuple[int, E]]:
    """Apply rows `[0, count)` in parts of `part_size` with `attempt(start, end)`, which
    applies those rows (all or none) and returns the record error it failed with, or
    None. A failed part is split in two and each half applied, first the first, down to
    single rows. Returns the failing rows and their errors, in order; stops once `limit`
    are found (what is left is not applied)."""
    failed: list[tuple[int, E]] = []

    def full() -> bool:
        return limit is not None and len(failed) >= limit

    def apply(start: int, end: int) -> None:
        if full():
            return
        error = attempt(start, end)
        if error is None:
            return
        if end - start == 1:
            failed.append((start, error))
            return
        middle = (start + end) // 2
        apply(start, middle)
        apply(middle, end)

    for start in range(0, count, part_size):
        apply(start, min(count, start + part_size))
    return failed
