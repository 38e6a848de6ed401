"""A connector's offsets over its tasks' checkpoints, as the herder's offsets operations
reach them through the runtime (`herder.runtime.TaskOffsets`), off the event loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.worker.test_checkpoint_offsets import checkpoint
from worker.runtime.connector_offsets import CheckpointOffsets
from worker.runtime.task_offsets import OffsetsError, SourceOffset


async def test_each_task_with_a_checkpoint_shows_its_committed_offsets(tmp_path: Path) -> None:
    checkpoint(tmp_path / "gen", [['{"offset":15}'], ['{"offset":30}']], committed=1)
    offsets = CheckpointOffsets(tmp_path)

    assert await offsets.committed_offsets("gen") == [SourceOffset(0, 0, {"offset": 30})]
    assert await offsets.committed_offsets("never-ran") == []


async def test_a_task_without_a_checkpoint_cannot_be_altered(tmp_path: Path) -> None:
    checkpoint(tmp_path / "gen", [['{"offset":15}']], committed=0)

    with pytest.raises(
        OffsetsError, match=r"no task 3 with a checkpoint \(tasks with one: \[0\]\)"
    ):
        await CheckpointOffsets(tmp_path).alter_offsets("gen", {3: {0: {"offset": 1}}})


async def test_a_refusal_names_its_task(tmp_path: Path) -> None:
    checkpoint(tmp_path / "gen", [['{"offset":15}']], committed=0)

    with pytest.raises(OffsetsError, match=r"^task 0: .*there is no source 4"):
        await CheckpointOffsets(tmp_path).alter_offsets("gen", {0: {4: {"offset": 1}}})


async def test_a_task_given_only_nulls_is_reset_and_a_reset_removes_every_checkpoint(
    tmp_path: Path,
) -> None:
    task_0 = checkpoint(tmp_path / "gen", [['{"offset":15}']], committed=0)
    offsets = CheckpointOffsets(tmp_path)

    await offsets.alter_offsets("gen", {0: {0: None}})
    assert not task_0.exists()

    checkpoint(tmp_path / "gen", [['{"offset":15}']], committed=0)
    await offsets.reset_offsets("gen")
    assert await offsets.committed_offsets("gen") == []
    assert list((tmp_path / "gen").iterdir()) == []
