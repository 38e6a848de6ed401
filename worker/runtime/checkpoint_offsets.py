"""A Spark task's progress as Kafka Connect's offsets API shows it: read from, and
written to, the task's structured-streaming checkpoint.

Spark keeps two logs per query: `offsets/<batch>` (written before a batch runs: a version
line, the batch metadata, then one end offset per source, `-` for none) and
`commits/<batch>` (written once the sink has the batch). A restarted query resumes after
the newest batch that has both. So the offsets a task has *committed* are those of its
newest committed batch, and altering them means appending one more batch that is already
committed, with the new offsets; nothing Spark wrote is ever rewritten. Resetting removes
the checkpoint, so the query starts from its sources' initial offsets at batch 0.

The ids of the batches appended so, and of the uncommitted batches they superseded, are
listed beside the checkpoint (`ALTERED_FILE`): they are the only batches a sink never
committed, and a file sink must log them as empty
(`worker.connectors.files.file_sink`) while every other gap in its log stays a gap that
Spark refuses (a checkpoint resumed into another directory).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from worker.runtime.task_offsets import OffsetsError, SourceOffset

NO_OFFSET = "-"
ALTERED_FILE: Final = "sparkherd-altered-batches.json"
"""In a task's checkpoint directory, beside Spark's own files (which Spark ignores)."""


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
    their newest committed offsets); the batch id written.

    A batch Spark planned but never committed (a stop that interrupted it) is superseded:
    the new batch comes after it, and its id is listed with the appended one, so a file
    sink logs it as empty instead of leaving a gap its next compaction refuses. The query
    must not be running: Spark would not see the batch until it restarts, and could write
    the same batch id itself.
    """
    newest = _newest(checkpoint / "offsets")
    if newest is None:
        raise OffsetsError(
            f"{checkpoint.name} has not started a batch yet, so its checkpoint has no "
            "offsets to alter; run it once first"
        )
    last_commit = _newest(checkpoint / "commits")
    header, sources = _read_log(
        checkpoint / "offsets" / str(newest if last_commit is None else last_commit)
    )
    unknown = sorted(set(offsets) - set(range(len(sources))))
    if unknown:
        raise OffsetsError(
            f"{checkpoint.name} reads {len(sources)} source(s); there is no source {unknown[0]}"
        )
    unsettled = sorted(set(range(len(sources))) - set(offsets))
    if last_commit is None and unsettled:
        raise OffsetsError(
            f"{checkpoint.name} has not committed a batch yet, so where its source "
            f"{unsettled[0]} resumes is unknown; give every source's offset"
        )
    altered = [
        json.dumps(offsets[index], separators=(",", ":")) if index in offsets else line
        for index, line in enumerate(sources)
    ]
    batch = newest + 1
    commit = (
        _read_text(checkpoint / "commits" / str(last_commit))
        if last_commit is not None
        else 'v1\n{"nextBatchWatermarkMs":0}'
    )
    _write_new(checkpoint / "offsets" / str(batch), "\n".join([*header, *altered]))
    _write_new(checkpoint / "commits" / str(batch), commit)
    uncommitted = range(0 if last_commit is None else last_commit + 1, batch + 1)
    listed = checkpoint / ALTERED_FILE
    temporary = listed.with_name(f".{ALTERED_FILE}.tmp")
    temporary.write_text(json.dumps(sorted({*altered_batches(checkpoint), *uncommitted})), "utf-8")
    os.replace(temporary, listed)
    return batch


def altered_batches(checkpoint: Path) -> frozenset[int]:
    """The ids of the batches `alter_offsets` appended to `checkpoint`, and of those they
    superseded uncommitted."""
    listed = checkpoint / ALTERED_FILE
    if not listed.is_file():
        return frozenset()
    return frozenset(int(batch) for batch in json.loads(listed.read_text(encoding="utf-8")))


SEEDED_METADATA: Final = '{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}'
"""The batch metadata of a seeded batch: no watermark, and no recorded settings, which
Spark reads as the values it gave them before it recorded them (those of stateful
operators; a task's query keeps no state)."""


def seed_offsets(checkpoint: Path, offset: Any) -> None:
    """Make a new checkpoint whose batch 0 is committed and ended at `offset` (of the
    query's one source), so that the query's first run resumes after it, at batch 1.
    Refused where the checkpoint has a batch already."""
    if newest_planned_batch(checkpoint) >= 0:
        raise OffsetsError(f"{checkpoint.name} has offsets already")
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(exist_ok=True)
    line = json.dumps(offset, separators=(",", ":"))
    _write_new(checkpoint / "offsets" / "0", "\n".join(["v1", SEEDED_METADATA, line]))
    _write_new(checkpoint / "commits" / "0", 'v1\n{"nextBatchWatermarkMs":0}')


def reset_offsets(checkpoint: Path) -> bool:
    """Remove the checkpoint; whether there was one."""
    if not checkpoint.exists():
        return False
    shutil.rmtree(checkpoint)
    return True


def newest_planned_batch(checkpoint: Path) -> int:
    """The id of the newest batch in the offsets log (-1: none planned yet): Spark writes
    it before the batch runs, so it may be ahead of `newest_committed_batch` by one."""
    newest = _newest(checkpoint / "offsets")
    return -1 if newest is None else newest


def batch_end_offsets(checkpoint: Path, batch: int) -> list[Any]:
    """The end offset of each source of `batch` (None for a source without one)."""
    sources = _read_log(checkpoint / "offsets" / str(batch))[1]
    return [None if line == NO_OFFSET else json.loads(line) for line in sources]


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
