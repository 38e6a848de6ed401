"""A Spark task's progress as Kafka Connect's offsets API shows it: read from, and
written to, the task's structured-streaming checkpoint.

Spark keeps two logs per query: `offsets/<batch>` (written before a batch runs: a version
line, the batch metadata, then one end offset per source, `-` for none) and
`commits/<batch>` (written once the sink has the batch). A restarted query resumes after
the newest batch that has both. So the offsets a task has *committed* are those of its
newest committed batch, and altering them means appending one more batch that is already
committed, with the new offsets; nothing Spark wrote is ever rewritten. Resetting removes
the checkpoint, so the query starts from its sources' initial offsets at batch 0.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NO_OFFSET = "-"
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


def committed_offsets(checkpoint: Path, task: int) -> list[SourceOffset]:
    """The offsets of the newest committed batch; none if no batch has committed yet."""
    batch = _newest(checkpoint / "commits")
    if batch is None or not (checkpoint / "offsets" / str(batch)).is_file():
        return []
    sources = _read_log(checkpoint / "offsets" / str(batch))[1]
    return [
        SourceOffset(task, index, json.loads(line))
        for index, line in enumerate(sources)
        if line != NO_OFFSET
    ]


def alter_offsets(checkpoint: Path, offsets: Mapping[int, Any]) -> int:
    """Append a committed batch whose source `i` ends at `offsets[i]` (other sources keep
    their newest offsets); the batch id written.

    The query must not be running: Spark would not see the batch until it restarts, and
    could write the same batch id itself.
    """
    newest = _newest(checkpoint / "offsets")
    if newest is None:
        raise OffsetsError(
            f"{checkpoint.name} has not started a batch yet, so its checkpoint has no "
            "offsets to alter; run it once first"
        )
    header, sources = _read_log(checkpoint / "offsets" / str(newest))
    unknown = sorted(set(offsets) - set(range(len(sources))))
    if unknown:
        raise OffsetsError(
            f"{checkpoint.name} reads {len(sources)} source(s); there is no source {unknown[0]}"
        )
    altered = [
        json.dumps(offsets[index], separators=(",", ":")) if index in offsets else line
        for index, line in enumerate(sources)
    ]
    batch = newest + 1
    last_commit = _newest(checkpoint / "commits")
    commit = (
        _read_text(checkpoint / "commits" / str(last_commit))
        if last_commit is not None
        else 'v1\n{"nextBatchWatermarkMs":0}'
    )
    _write_new(checkpoint / "offsets" / str(batch), "\n".join([*header, *altered]))
    _write_new(checkpoint / "commits" / str(batch), commit)
    return batch


def reset_offsets(checkpoint: Path) -> bool:
    """Remove the checkpoint; whether there was one."""
    if not checkpoint.exists():
        return False
    shutil.rmtree(checkpoint)
    return True


def newest_committed_batch(checkpoint: Path) -> int:
    """The id of the newest batch in the commit log (-1: none has committed): the sink
    has every row of it, whatever Spark's progress reports say."""
    newest = _newest(checkpoint / "commits")
    return -1 if newest is None else newest


def _newest(log: Path) -> int | None:
    ids = [int(p.name) for p in log.iterdir() if p.name.isdigit()] if log.is_dir() else []
    return max(ids, default=None)


def _read_log(path: Path) -> tuple[list[str], list[str]]:
    """(version and metadata lines, one line per source)."""
    lines = _read_text(path).split("\n")
    if len(lines) < 2 or not lines[0].startswith("v"):
        raise OffsetsError(f"{path} is not a Spark offset log entry")
    return lines[:2], lines[2:]


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8").rstrip("\n")


def _write_new(path: Path, text: str) -> None:
    """Write through a temporary file and rename, as Spark does, so a reader never sees
    half an entry; an existing entry is never replaced."""
    if path.exists():
        raise OffsetsError(f"{path} exists already: is the task still running?")
    temporary = path.with_name(f".{path.name}.sparkherd.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
