"""A connector's offsets over its tasks' checkpoints: what the herder's offsets operations
(`herder.runtime.TaskOffsets`) read and write, off the event loop.

Checkpoints may sit on shared storage that answers slowly (a network volume, S3), so
every look runs on a thread of its own and the herder's loop, which must keep
heartbeating, only awaits it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path

from worker.runtime.checkpoint_layout import checkpoint_dir_for, checkpointed_tasks, handover_file
from worker.runtime.checkpoint_offsets import alter_offsets, committed_offsets, reset_offsets
from worker.runtime.daemon_thread import DaemonThread
from worker.runtime.task_offsets import OffsetsError, SourceOffset


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
