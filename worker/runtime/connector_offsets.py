"""A connector's offsets over its tasks' checkpoints: what the herder's offsets operations
(`herder.runtime.TaskOffsets`) read and write, off the event loop.

Checkpoints may sit on shared storage that answers slowly (a network volume, S3), so
every look runs on a thread of its own and the herder's loop, which must keep
heartbeating, only awaits it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Final

from worker.plugins.checkpoint_fingerprint import FINGERPRINT_FILE
from worker.plugins.checkpoint_layout import checkpoint_dir_for, checkpointed_tasks, handover_file
from worker.plugins.task_claims import CLAIMS_DIR
from worker.runtime.checkpoint_offsets import (
    alter_offsets,
    committed_offsets,
    reset_offsets,
    seed_offsets,
)
from worker.runtime.daemon_thread import DaemonThread
from worker.runtime.task_offsets import InitialOffsets, OffsetsError, SourceOffset

NO_POSITION: Final = frozenset({CLAIMS_DIR, FINGERPRINT_FILE})
"""What a task's checkpoint directory may hold and still say nothing of where it
resumes: the claims of its runs and what it was made for."""


def connector_offsets(checkpoint_root: Path, connector: str) -> list[SourceOffset]:
    """Blocking: what each task's checkpoint says it has committed."""
    return [
        offset
        for task in checkpointed_tasks(checkpoint_root, connector)
        for offset in committed_offsets(checkpoint_dir_for(checkpoint_root, connector, task), task)
    ]


def alter_connector_offsets(
    checkpoint_root: Path, connector: str, offsets: Mapping[int, Mapping[int, object | None]]
) -> None:
    """Blocking: `offsets[task][source]` is the end offset to resume after; a task given
    only None offsets is reset. Raises `OffsetsError` naming the task it cannot alter."""
    checkpointed = checkpointed_tasks(checkpoint_root, connector)
    unknown = sorted(set(offsets) - set(checkpointed))
    if unknown:
        raise OffsetsError(
            f"Connector {connector} has no task {unknown[0]} with a checkpoint (tasks with "
            f"one: {checkpointed or 'none'}); only a task that has run has offsets"
        )
    for task, by_source in sorted(offsets.items()):
        checkpoint = checkpoint_dir_for(checkpoint_root, connector, task)
        try:
            if all(offset is None for offset in by_source.values()):
                reset_offsets(checkpoint)
            else:
                alter_offsets(checkpoint, by_source)
        except OffsetsError as exc:
            raise OffsetsError(f"task {task}: {exc}") from exc


def reset_connector_offsets(checkpoint_root: Path, connector: str) -> None:
    """Blocking: remove every task's checkpoint, and the positions of partitions handed
    over between them, so each task starts from its sources' beginning."""
    for task in checkpointed_tasks(checkpoint_root, connector):
        reset_offsets(checkpoint_dir_for(checkpoint_root, connector, task))
    handover_file(checkpoint_root, connector).unlink(missing_ok=True)


def seed_connector_offsets(checkpoint_root: Path, connector: str, seed: InitialOffsets) -> None:
    """Blocking: where a new connector's tasks start (KIP-995), in place before its
    config is written: a sink's positions in the connector's hand-over file, which each
    task takes its partitions from as it starts with no checkpoint; each source task's
    offset as a seeded checkpoint (`checkpoint_offsets.seed_offsets`).

    Refused when the name holds positions already (checkpoints are kept across delete
    and re-create, as Connect keeps offsets by name): the two would disagree."""
    handover = handover_file(checkpoint_root, connector)
    holding = [
        task
        for task in checkpointed_tasks(checkpoint_root, connector)
        if _holds_position(checkpoint_dir_for(checkpoint_root, connector, task))
    ]
    if holding or handover.exists():
        where = f"tasks {holding}" if holding else "a hand-over of partitions between tasks"
        raise OffsetsError(
            f"Connector {connector} has offsets already, from an earlier connector of that "
            f"name ({where}; checkpoints are kept across delete and re-create): create it "
            'without initial_offsets and "initial_state": "STOPPED", then alter (PATCH '
            f"/connectors/{connector}/offsets) or reset them (DELETE) before resuming it, "
            "or use another name"
        )
    if seed.positions:
        handover.parent.mkdir(parents=True, exist_ok=True)
        temporary = handover.with_name(f".{handover.name}.tmp")
        temporary.write_text(json.dumps(seed.handover(), sort_keys=True), encoding="utf-8")
        os.replace(temporary, handover)
    for task, offset in sorted(seed.marks.items()):
        seed_offsets(checkpoint_dir_for(checkpoint_root, connector, task), offset)


def _holds_position(checkpoint: Path) -> bool:
    return any(entry.name not in NO_POSITION for entry in checkpoint.iterdir())


class CheckpointOffsets:
    """The offsets operations of the Spark runtime, one at a time on a daemon thread
    (`worker.runtime.daemon_thread`): a look at storage that hangs does not hold the
    process's exit."""

    def __init__(self, checkpoint_root: Path) -> None:
        self._root = checkpoint_root
        self._thread = DaemonThread("checkpoint-offsets")

    async def committed_offsets(self, connector: str) -> list[SourceOffset]:
        return await self._thread.call(partial(connector_offsets, self._root, connector))

    async def alter_offsets(
        self, connector: str, offsets: Mapping[int, Mapping[int, object | None]]
    ) -> None:
        await self._thread.call(partial(alter_connector_offsets, self._root, connector, offsets))

    async def reset_offsets(self, connector: str) -> None:
        await self._thread.call(partial(reset_connector_offsets, self._root, connector))

    async def seed_offsets(self, connector: str, seed: InitialOffsets) -> None:
        await self._thread.call(partial(seed_connector_offsets, self._root, connector, seed))
