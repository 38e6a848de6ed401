"""The compact encoding of an `Allocation`, sized for large groups.

A group's metadata (every subscription plus every assignment) must stay under the broker's
1 MB message limit, and with per-connector spreading a worker holds one task of each of
hundreds of connectors. So each connector name is written once per allocation, sorted and
front-coded (a name shares its prefix with the previous one), the tasks of a connector are
written as ranges, and the body is columnar (names, then counts, then range starts, then
lengths) so that zlib finds the repetition; it is compressed when that makes it smaller.

    Allocation   => Body: nullable bytes          null = the empty allocation
      Body       => Format: int8  Content         0 = plain, 1 = zlib(Content)
      Content    => Names Connectors RangeCounts RangeStarts RangeLengths
        Names        => [SharedPrefix: int16  Suffix: string]   unique, sorted when written
        Connectors   => [int32]   indexes into Names of the connectors held (not their tasks)
        RangeCounts  => [int32]   one per name: how many task ranges that connector has
        RangeStarts  => [int32]   first task of every range, grouped by name in Names order
        RangeLengths => [int32]   number of tasks of every range (>= 1)

From v4 on (`write_indexed_allocation`) the content starts with the connectors named by
their index in the message's `ConnectorTable`, and `Names` holds only those outside it:

      IndexedContent => IndexGaps Content
        IndexGaps    => [int32]   first index, then each index minus the previous (>= 1)

The table's names come first in the order Connectors and RangeCounts refer to, then Names.

A decoded allocation never exceeds `MAX_TASKS` tasks, `MAX_CONTENT_BYTES` of content or
`MAX_NAME_CHARACTERS` of names (front-coding lets 5 bytes stand for a 32 KB name), so a few
hostile bytes cannot make the leader build millions of objects.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from enum import IntEnum
from itertools import accumulate

from protocol.connector_table import NO_TABLE, ConnectorTable, UnknownConnectorTable
from protocol.errors import EncodeError
from protocol.messages import EMPTY_ALLOCATION, Allocation, ConnectorTaskId
from protocol.wire import INT16_MAX, INT32_MAX, Reader, Writer

MAX_TASKS = 1_000_000
MAX_CONTENT_BYTES = 16 * 1024 * 1024
MAX_NAME_CHARACTERS = 4 * 1024 * 1024
COMPRESSION_THRESHOLD = 128
"""Contents shorter than this are written plain: zlib's framing would outweigh its gain."""

_NAME_ENTRY_MIN_SIZE = 4


class ContentFormat(IntEnum):
    PLAIN = 0
    ZLIB = 1


def write_allocation(writer: Writer, allocation: Allocation, field: str) -> None:
    _write_body(writer, allocation, field, None)


def write_indexed_allocation(
    writer: Writer, allocation: Allocation, field: str, table: ConnectorTable
) -> None:
    _write_body(writer, allocation, field, table)


def read_allocation(reader: Reader, field: str) -> Allocation:
    return _read_body(reader, field, None, NO_TABLE)


def read_indexed_allocation(
    reader: Reader, field: str, table: ConnectorTable | None, fingerprint: int
) -> Allocation:
    """`table` is this process's table of `fingerprint`, None when it holds none."""
    return _read_body(reader, field, table, fingerprint)


_Table = ConnectorTable | None


def _write_body(writer: Writer, allocation: Allocation, field: str, table: _Table) -> None:
    if allocation.is_empty():
        writer.nullable_bytes(None, field)
        return
    content = _encode_content(allocation, field, table)
    content_format = ContentFormat.PLAIN
    if len(content) >= COMPRESSION_THRESHOLD:
        compressed = zlib.compress(content, 9)
        if len(compressed) < len(content):
            content, content_format = compressed, ContentFormat.ZLIB
    writer.nullable_bytes(bytes([content_format]) + content, field)


def _read_body(reader: Reader, field: str, table: _Table, fingerprint: int) -> Allocation:
    """`fingerprint` NO_TABLE: the content has no index gaps (before v4)."""
    body = reader.nullable_bytes(field)
    if body is None:
        return EMPTY_ALLOCATION
    if not body:
        raise reader.error(f"{field} is present but has no format byte")
    content_format, content = body[0], body[1:]
    if content_format == ContentFormat.ZLIB:
        content = _inflate(reader, content, field)
    elif content_format != ContentFormat.PLAIN:
        raise reader.error(f"{field} has unknown content format {content_format}")
    content_reader = Reader(content, f"{reader.context} {field}")
    if table is None and fingerprint == NO_TABLE:
        return _decode_content(content_reader, [])
    return _decode_content(content_reader, _read_indexed_names(content_reader, table, fingerprint))


def _encode_content(allocation: Allocation, field: str, table: _Table) -> bytes:
    tasks_by_name: defaultdict[str, list[int]] = defaultdict(list)
    for task in allocation.tasks:
        if not 0 <= task.task <= INT32_MAX:
            raise EncodeError(f"{field}: task {task} is outside 0..{INT32_MAX}")
        tasks_by_name[task.connector].append(task.task)
    every_name = sorted(allocation.connectors | tasks_by_name.keys())
    in_table = {} if table is None else table.index_of
    indexed = [name for name in every_name if name in in_table]
    spelled = [name for name in every_name if name not in in_table]
    names = indexed + spelled
    ranges = [list(_ranges(sorted(tasks_by_name.get(name, ())))) for name in names]
    index_of = {name: index for index, name in enumerate(names)}

    writer = Writer()
    if table is not None:
        indexes = [in_table[name] for name in indexed]
        gaps = [b - a for a, b in zip([0, *indexes], indexes, strict=False)]
        writer.int32_array(gaps, f"{field} index gaps")
    writer.array_count(len(spelled), f"{field} names")
    previous = ""
    for name in spelled:
        shared = _shared_prefix_length(previous, name)
        writer.int16(shared, f"{field} name prefix")
        writer.string(name[shared:], f"{field} connector name")
        if _utf8_length(name) > INT16_MAX:
            raise EncodeError(f"{field}: connector name {name[:40]!r}... is too long")
        previous = name
    connector_indexes = sorted(index_of[name] for name in allocation.connectors)
    writer.int32_array(connector_indexes, f"{field} connectors")
    writer.int32_array([len(rs) for rs in ranges], f"{field} range counts")
    writer.int32_array([start for rs in ranges for start, _ in rs], f"{field} starts")
    writer.int32_array([size for rs in ranges for _, size in rs], f"{field} lengths")
    return writer.getvalue()


def _read_indexed_names(reader: Reader, table: _Table, fingerprint: int) -> list[str]:
    gaps = reader.int32_array("index gaps")
    if not gaps:
        return []
    if table is None:
        raise UnknownConnectorTable(
            f"{reader.context}: names connectors by indexes into connector table "
            f"{fingerprint & 0xFFFFFFFFFFFFFFFF:016x}, which this worker does not hold "
            "(its config snapshot names other connectors)"
        )
    if gaps[0] < 0 or any(gap < 1 for gap in gaps[1:]):
        raise reader.error("connector indexes must be ascending and distinct")
    indexes = list(accumulate(gaps))
    if indexes[-1] >= len(table.names):
        raise reader.error(
            f"connector index {indexes[-1]} is outside the table's 0..{len(table.names) - 1}"
        )
    return [table.names[index] for index in indexes]


def _decode_content(reader: Reader, indexed: list[str]) -> Allocation:
    names = indexed + _read_names(reader, set(indexed))
    connectors = frozenset(
        names[index] for index in _read_indexes(reader, "connectors", len(names))
    )
    range_counts = reader.int32_array("range counts")
    if len(range_counts) != len(names):
        raise reader.error(f"{len(range_counts)} range counts for {len(names)} names")
    if any(count < 0 for count in range_counts):
        raise reader.error("a range count is negative")
    starts = reader.int32_array("range starts")
    lengths = reader.int32_array("range lengths")
    if len(starts) != sum(range_counts) or len(lengths) != len(starts):
        raise reader.error(
            f"range counts add up to {sum(range_counts)} but there are {len(starts)} starts "
            f"and {len(lengths)} lengths"
        )
    reader.expect_end("the allocation")
    tasks = _expand_tasks(reader, names, range_counts, starts, lengths)
    return Allocation(connectors, tasks)


def _read_names(reader: Reader, seen: set[str]) -> list[str]:
    count = reader.array_count("names", _NAME_ENTRY_MIN_SIZE)
    names: list[str] = []
    characters = 0
    previous = ""
    for _ in range(count):
        shared = reader.int16("name prefix")
        if not 0 <= shared <= len(previous):
            raise reader.error(
                f"name prefix {shared} is outside 0..{len(previous)} (the previous name)"
            )
        name = previous[:shared] + reader.string("connector name")
        characters += len(name)
        if characters > MAX_NAME_CHARACTERS:
            raise reader.error(f"connector names add up to more than {MAX_NAME_CHARACTERS} chars")
        if _utf8_length(name) > INT16_MAX:
            raise reader.error(f"connector name {name[:40]!r}... is longer than {INT16_MAX} bytes")
        if name in seen:
            raise reader.error(f"connector name {name[:40]!r} is listed twice")
        seen.add(name)
        names.append(name)
        previous = name
    return names


def _read_indexes(reader: Reader, field: str, bound: int) -> Sequence[int]:
    indexes = reader.int32_array(field)
    if any(not 0 <= index < bound for index in indexes):
        raise reader.error(f"{field} refer to a name outside 0..{bound - 1}")
    return indexes


def _expand_tasks(
    reader: Reader,
    names: list[str],
    range_counts: Sequence[int],
    starts: Sequence[int],
    lengths: Sequence[int],
) -> frozenset[ConnectorTaskId]:
    if any(start < 0 for start in starts):
        raise reader.error("a task range starts below 0")
    if any(length < 1 for length in lengths):
        raise reader.error("a task range is empty or negative")
    if any(start + length - 1 > INT32_MAX for start, length in zip(starts, lengths, strict=True)):
        raise reader.error(f"a task range ends beyond {INT32_MAX}")
    if sum(lengths) > MAX_TASKS:
        raise reader.error(f"the allocation holds {sum(lengths)} tasks, over {MAX_TASKS}")
    owners = (name for name, count in zip(names, range_counts, strict=True) for _ in range(count))
    return frozenset(
        ConnectorTaskId(owner, task)
        for owner, start, length in zip(owners, starts, lengths, strict=True)
        for task in range(start, start + length)
    )


def _inflate(reader: Reader, compressed: bytes, field: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        content = inflater.decompress(compressed, MAX_CONTENT_BYTES + 1)
    except zlib.error as exc:
        raise reader.error(f"{field} is not a valid zlib stream: {exc}") from None
    if len(content) > MAX_CONTENT_BYTES:
        raise reader.error(f"{field} inflates to more than {MAX_CONTENT_BYTES} bytes")
    if not inflater.eof:
        raise reader.error(f"{field} zlib stream is truncated")
    if inflater.unused_data:
        raise reader.error(f"{field} has {len(inflater.unused_data)} bytes after its zlib stream")
    return content


def _ranges(sorted_tasks: Iterable[int]) -> Iterator[tuple[int, int]]:
    """Maximal runs of consecutive task numbers, as (start, length)."""
    start = length = 0
    for task in sorted_tasks:
        if length and task == start + length:
            length += 1
            continue
        if length:
            yield start, length
        start, length = task, 1
    if length:
        yield start, length


def _shared_prefix_length(previous: str, name: str) -> int:
    limit = min(len(previous), len(name), INT16_MAX)
    shared = 0
    while shared < limit and previous[shared] == name[shared]:
        shared += 1
    return shared


def _utf8_length(name: str) -> int:
    return len(name.encode("utf-8", "surrogatepass"))
