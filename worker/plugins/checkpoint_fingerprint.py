"""What each task's checkpoint was made for, recorded beside it, and whether a config
still fits it.

Kafka Connect keeps a connector's offsets by name, across delete and re-create, and so
does a checkpoint here. But a Spark checkpoint holds more than positions: Spark's file
sink logs its commits in the output directory under the checkpoint's batch ids, so a
query resumed at batch n into another directory writes a commit log that starts at n,
and fails for good once it compacts that log (`BATCH_METADATA_NOT_FOUND`); every restart
fails the same way. A plugin names the settings its checkpoints are bound to
(`Connector.checkpoint_keys`); each start of a task records their values beside its
checkpoint, and a config with other values is refused before its tasks can run on it.

Values are recorded as digests: one may come from a `${provider:...}` secret, and the
record only has to tell whether a value changed. A checkpoint made before these records
existed has none, and nothing in it names its sink: it is taken to fit the config it
next starts with, which records it (a file sink that does not fit still fails with
`BATCH_METADATA_NOT_FOUND`, which is not restarted automatically).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from worker.plugins.task_state import NOT_FIT_MARK

FINGERPRINT_FILE: Final = "sparkherd-made-for.json"
"""In a task's checkpoint directory, beside Spark's own files (which Spark ignores)."""


class CheckpointNotFit(RuntimeError):
    """A task's checkpoint was made for other values of settings it is bound to."""

    def __init__(self, connector: str, task: int, changed: list[str]) -> None:
        super().__init__(
            f"Task {task} of connector {connector} did not start: its {NOT_FIT_MARK}"
            f"{_keys(changed)}, and resuming from it would fail at every start. "
            + ways_forward(connector, changed)
        )


def fingerprint(settings: Mapping[str, str]) -> dict[str, str]:
    """`settings` (the values a checkpoint is bound to) by key, as digests."""
    return {
        key: hashlib.sha256(value.encode("utf-8")).hexdigest()
        for key, value in sorted(settings.items())
    }


def changed_keys(recorded: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """The recorded keys whose value `current` does not have (a key the checkpoint was
    not made with, such as one a newer plugin declares, is recorded at the next start)."""
    return sorted(key for key, digest in recorded.items() if current.get(key) != digest)


def ways_forward(connector: str, changed: list[str]) -> str:
    """What a user can do about a checkpoint that does not fit: Connect's KIP-875 reset,
    the old values, or another name."""
    base = f"/connectors/{connector}"
    return (
        f"To start over with the new {_keys(changed)}, stop the connector (PUT {base}/stop, "
        f'or create it with "initial_state": "STOPPED"), reset its offsets '
        f"(DELETE {base}/offsets) and resume it (PUT {base}/resume); to continue where it "
        f"stopped, give {_keys(changed)} back the value the checkpoint was made for; or "
        "create the connector under another name."
    )


def _keys(keys: list[str]) -> str:
    return ", ".join(keys)


def has_committed_batch(checkpoint: Path) -> bool:
    """Whether Spark would resume this checkpoint after a batch (rather than start at
    batch 0, which fits any config)."""
    commits = checkpoint / "commits"
    return commits.is_dir() and any(entry.name.isdigit() for entry in commits.iterdir())


def recorded(checkpoint: Path) -> dict[str, str] | None:
    """The fingerprint recorded in `checkpoint`, if it has one that binds it: none for a
    checkpoint without a committed batch, or one made before fingerprints were."""
    path = checkpoint / FINGERPRINT_FILE
    if not has_committed_batch(checkpoint) or not path.is_file():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # cut short by a full disk, say: recorded again at start
        return None
    if not isinstance(found, dict):
        return None
    return {str(key): str(value) for key, value in found.items()}


def unfit(checkpoints: Mapping[int, Path], current: Mapping[str, str]) -> dict[int, list[str]]:
    """The tasks (of `checkpoints`, by task) whose checkpoint does not fit `current`,
    with the keys that changed."""
    found = {task: recorded(checkpoint) for task, checkpoint in checkpoints.items()}
    changed = {task: changed_keys(fp, current) for task, fp in found.items() if fp is not None}
    return {task: keys for task, keys in changed.items() if keys}


def fit(connector: str, task: int, checkpoint: Path, current: Mapping[str, str]) -> None:
    """Before a task's query starts: raise `CheckpointNotFit` unless its checkpoint fits
    `current`, then record `current` as what the checkpoint is made for."""
    changed = unfit({task: checkpoint}, current).get(task)
    if changed:
        raise CheckpointNotFit(connector, task, changed)
    checkpoint.mkdir(parents=True, exist_ok=True)
    temporary = checkpoint / f".{FINGERPRINT_FILE}.tmp"
    temporary.write_text(json.dumps(dict(current), sort_keys=True), encoding="utf-8")
    os.replace(temporary, checkpoint / FINGERPRINT_FILE)
