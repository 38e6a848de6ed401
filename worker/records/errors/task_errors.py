"""A task's per-batch error counts: where they are kept and how they are written.

The task that handles a batch's bad records (`errors.tolerance`, the dead letter queue)
and the metrics that report them run in different places: the first inside the batch,
the second in the runtime that watches the task. They meet in one file per batch under
the task's checkpoint, `<checkpoint_dir>/errors/<batch_id>.json`, written atomically
before the batch's output is committed. A batch that runs again after a crash writes the
same file again with the same counts (the batch holds the same records), so reading the
files never counts a batch twice; a batch without a file had no errors (zeros may be
omitted). The counts mean what Connect's `task-error-metrics` mean (KIP-298).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

ERRORS_DIR: Final = "errors"
"""The directory of the per-batch files, inside a task's checkpoint directory."""


@dataclass(frozen=True)
class BatchErrors:
    """One batch's error counts, in Connect's meanings."""

    record_errors: int = 0
    """Records that hit an error (conversion or `transform.sql`)."""
    record_failures: int = 0
    """Failed attempts, retries included (a record whose DLQ produce was retried twice
    adds more than one)."""
    records_skipped: int = 0
    """Records not written to the output because of an error."""
    errors_logged: int = 0
    """Errors written to the log (`errors.log.enable`)."""
    deadletterqueue_produce_requests: int = 0
    """Records sent to the dead letter queue."""
    deadletterqueue_produce_failures: int = 0
    """Records that could not be written to the dead letter queue."""
    last_error_timestamp_ms: int | None = None
    """When the batch's last error was seen (epoch ms); None: no error."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> BatchErrors:
        """Parse a file's text; keys this version does not know are ignored, missing ones
        are zero, so a reader and a writer of different versions still agree."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"batch errors must be a JSON object, not {type(data).__name__}")
        counts = {
            name: _count(data, name)
            for name in cls.__dataclass_fields__
            if name != "last_error_timestamp_ms"
        }
        last = data.get("last_error_timestamp_ms")
        if last is not None and (isinstance(last, bool) or not isinstance(last, int)):
            raise ValueError(f"last_error_timestamp_ms must be an integer or null, not {last!r}")
        return cls(**counts, last_error_timestamp_ms=last)

    def __add__(self, other: BatchErrors) -> BatchErrors:
        """The sum of two batches' counts, the later error time kept: a task's totals."""
        pair = (self.last_error_timestamp_ms, other.last_error_timestamp_ms)
        stamps = [stamp for stamp in pair if stamp is not None]
        return BatchErrors(
            record_errors=self.record_errors + other.record_errors,
            record_failures=self.record_failures + other.record_failures,
            records_skipped=self.records_skipped + other.records_skipped,
            errors_logged=self.errors_logged + other.errors_logged,
            deadletterqueue_produce_requests=self.deadletterqueue_produce_requests
            + other.deadletterqueue_produce_requests,
            deadletterqueue_produce_failures=self.deadletterqueue_produce_failures
            + other.deadletterqueue_produce_failures,
            last_error_timestamp_ms=max(stamps) if stamps else None,
        )


NO_ERRORS: Final = BatchErrors()


def _count(data: dict[str, object], name: str) -> int:
    value = data.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    return value


def batch_errors_path(checkpoint_dir: Path, batch_id: int) -> Path:
    """`<checkpoint_dir>/errors/<batch_id>.json`."""
    return checkpoint_dir / ERRORS_DIR / f"{batch_id}.json"


def write_batch_errors(checkpoint_dir: Path, batch_id: int, errors: BatchErrors) -> None:
    """Write a batch's counts atomically (a temporary file renamed over the final one), so
    a reader sees the old file, the new one or none, never half of one."""
    path = batch_errors_path(checkpoint_dir, batch_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(errors.to_json(), encoding="utf-8")
    os.replace(temporary, path)


def read_batch_errors(checkpoint_dir: Path, batch_id: int) -> BatchErrors:
    """A batch's counts; zeros when it has no file (it had no errors, or has not run)."""
    try:
        text = batch_errors_path(checkpoint_dir, batch_id).read_text(encoding="utf-8")
    except FileNotFoundError:
        return NO_ERRORS
    return BatchErrors.from_json(text)


def batches_with_errors(checkpoint_dir: Path) -> list[int]:
    """The ids of the batches that have a counts file, in order."""
    directory = checkpoint_dir / ERRORS_DIR
    if not directory.is_dir():
        return []
    stems = (path.name.removesuffix(".json") for path in directory.glob("*.json"))
    return sorted(int(stem) for stem in stems if stem.isdigit())
