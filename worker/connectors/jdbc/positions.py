"""Where `jdbc-to-kafka` stands in each table: the high-water mark, as a Spark offset.

A table's mark is the order key of the last row published: the incrementing column's
value, the timestamp (as integer epoch microseconds), or both, as the mode says. It is
the offset of the table's own Spark source, so Spark's checkpoint holds it and KIP-875's
offsets API shows and moves it: `{"<table>": {"incrementing": 41}}`,
`{"<table>": {"timestamp_us": 1700000000000000, "incrementing": 41}}`, or
`{"<table>": {}}` before the first row. Offsets hold integers from 0 to 2^63-1 only
(`worker.runtime.task_offsets.check_offset`), which is why the connector reads no row whose
incrementing value is negative or whose timestamp is before 1970: its mark could not be
kept.

Also here: how tables are split over tasks (each table in one task, round robin in the
order `table.whitelist` names them), and what a table name may be.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final, Literal

from worker.runtime.task_offsets import MAX_POSITION

Mode = Literal["incrementing", "timestamp", "timestamp+incrementing"]
INCREMENTING: Final = "incrementing"
TIMESTAMP: Final = "timestamp_us"
QUERY_TABLE: Final = "query"
"""The key a `query` connector's mark is kept under (Confluent's offsets use the same)."""
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MICROSECOND: Final = timedelta(microseconds=1)


class PositionError(ValueError):
    """An offset that is not a mark of this table in this mode; the message says why."""


@dataclass(frozen=True, order=True)
class Mark:
    """The order key of the last row published from a table; the fields the mode does
    not use are 0."""

    timestamp_us: int = 0
    incrementing: int = 0


def uses_timestamp(mode: Mode) -> bool:
    return mode != "incrementing"


def uses_incrementing(mode: Mode) -> bool:
    return mode != "timestamp"


def offset_of(table: str, mode: Mode, mark: Mark | None) -> dict[str, dict[str, int]]:
    """The Spark offset of `table`'s source at `mark` (None: before the first row)."""
    if mark is None:
        return {table: {}}
    fields: dict[str, int] = {}
    if uses_timestamp(mode):
        fields[TIMESTAMP] = mark.timestamp_us
    if uses_incrementing(mode):
        fields[INCREMENTING] = mark.incrementing
    return {table: fields}


def mark_of(offset: Mapping[str, object], table: str, mode: Mode) -> Mark | None:
    """The mark in `table`'s Spark offset (None: nothing read yet); `PositionError` when
    the offset belongs to another table or lacks what the mode needs (an offset altered
    by hand, or a checkpoint made under another `table.whitelist` or `tasks.max`)."""
    if set(offset) != {table}:
        raise PositionError(
            f"the checkpoint's offset {json.dumps(offset)} is not one of table {table!r}: "
            "was table.whitelist, query or tasks.max changed? Stop the connector and reset "
            "or alter its offsets (DELETE or PATCH /connectors/<name>/offsets)"
        )
    fields = offset[table]
    if not isinstance(fields, Mapping):
        raise PositionError(f"the offset of table {table!r} must be a JSON object")
    if not fields:
        return None
    wanted = {TIMESTAMP} if mode == "timestamp" else {INCREMENTING}
    if mode == "timestamp+incrementing":
        wanted = {TIMESTAMP, INCREMENTING}
    values = {key: fields.get(key) for key in wanted}
    if set(fields) != wanted or not all(_is_position(v) for v in values.values()):
        shape = ", ".join(f'"{key}": <0..{MAX_POSITION}>' for key in sorted(wanted))
        raise PositionError(
            f"the offset of table {table!r} in mode {mode} must be {{}} or {{{shape}}}, "
            f"not {json.dumps(dict(fields))}"
        )
    return Mark(int(values.get(TIMESTAMP) or 0), int(values.get(INCREMENTING) or 0))


def _is_position(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_POSITION


def micros(value: datetime | date) -> int:
    """Epoch microseconds of a value of a timestamp column (a value without a time zone
    is read as UTC, as the connector's sessions run in UTC)."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return (value - EPOCH) // ONE_MICROSECOND


def instant(timestamp_us: int) -> datetime:
    """The UTC instant `timestamp_us` microseconds after the epoch, exactly."""
    return EPOCH + timedelta(microseconds=timestamp_us)


def mark_from_key(mode: Mode, key: Sequence[object]) -> Mark:
    """The mark of a row from its order key as the database returned it: (timestamp,),
    (incrementing,) or (timestamp, incrementing)."""
    if mode == "incrementing":
        return Mark(incrementing=_integer(key[0]))
    stamp = key[0]
    if not isinstance(stamp, date):
        raise TypeError(f"a timestamp column gave {type(stamp).__name__}, not a timestamp")
    if mode == "timestamp":
        return Mark(timestamp_us=micros(stamp))
    return Mark(micros(stamp), _integer(key[1]))


def _integer(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"an incrementing column gave {type(value).__name__}, not an integer")
    return value


class TableNameError(ValueError):
    """A `table.whitelist` entry that names no table."""


def parse_table(name: str) -> tuple[str, ...]:
    """`table` or `schema.table`: the parts, each to be quoted as it is (names are exact,
    letter case included, as with Confluent's `quote.sql.identifiers=always`)."""
    parts = tuple(name.split("."))
    if len(parts) > 2 or not all(parts):
        raise TableNameError(f"{name!r} is not table or schema.table")
    return parts


def split_tables(tables: Sequence[str], max_tasks: int) -> list[list[str]]:
    """Each table in one task, round robin; no task without a table."""
    count = max(1, min(max_tasks, len(tables)))
    return [list(tables[i::count]) for i in range(count)]
