"""A new connector's initial offsets (KIP-995) put in place over real checkpoint
directories, and read back the way a task's start reads them: a sink's tasks take their
partitions' positions from the hand-over file, a source task resumes its seeded
checkpoint; a name that holds offsets already is refused, untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiokafka import TopicPartition

from worker.connectors.partition_takeover import starting_offsets
from worker.plugins.api import TaskContext
from worker.plugins.checkpoint_fingerprint import FINGERPRINT_FILE
from worker.plugins.checkpoint_layout import checkpoint_dir_for, handover_file
from worker.plugins.task_claims import CLAIMS_DIR
from worker.runtime.checkpoint_offsets import newest_committed_batch, newest_planned_batch
from worker.runtime.connector_offsets import CheckpointOffsets, seed_connector_offsets
from worker.runtime.task_offsets import InitialOffsets, OffsetsError, SourceOffset

SINK_SEED = InitialOffsets(positions={("orders", 0): 42, ("orders", 2): 7})


def sink_start(root: Path, task: int, partitions: list[int]) -> object:
    """What a Kafka sink task reading `partitions` of `orders` starts from."""
    context = TaskContext("sink", task, {}, {}, checkpoint_dir_for(root, "sink", task))
    assigned = [TopicPartition("orders", p) for p in partitions]
    return json.loads(starting_offsets(context, assigned, "earliest", None))


def test_each_sink_task_starts_its_partitions_at_their_initial_offsets(tmp_path: Path) -> None:
    seed_connector_offsets(tmp_path, "sink", SINK_SEED)

    assert sink_start(tmp_path, 0, [0, 1]) == {"orders": {"0": 42, "1": -2}}
    assert sink_start(tmp_path, 1, [2]) == {"orders": {"2": 7}}


async def test_a_source_task_resumes_after_its_initial_offset(tmp_path: Path) -> None:
    offsets = CheckpointOffsets(tmp_path)

    await offsets.seed_offsets("gen", InitialOffsets(marks={1: {"offset": 500}}))

    checkpoint = checkpoint_dir_for(tmp_path, "gen", 1)
    assert (newest_planned_batch(checkpoint), newest_committed_batch(checkpoint)) == (0, 0)
    assert await offsets.committed_offsets("gen") == [SourceOffset(1, 0, {"offset": 500})]
    assert not checkpoint_dir_for(tmp_path, "gen", 0).exists()


def test_a_checkpoint_with_only_claims_and_a_fingerprint_holds_no_position(
    tmp_path: Path,
) -> None:
    checkpoint = checkpoint_dir_for(tmp_path, "gen", 0)
    (checkpoint / CLAIMS_DIR).mkdir(parents=True)
    (checkpoint / FINGERPRINT_FILE).write_text("{}")

    seed_connector_offsets(tmp_path, "gen", InitialOffsets(marks={0: {"offset": 9}}))

    assert newest_committed_batch(checkpoint) == 0


@pytest.mark.parametrize("left", ["offsets", "sparkherd-start-offsets.json", "handover"])
def test_a_name_that_holds_offsets_already_is_refused_and_left_as_it_was(
    tmp_path: Path, left: str
) -> None:
    checkpoint = checkpoint_dir_for(tmp_path, "sink", 0)
    checkpoint.mkdir(parents=True)
    held = handover_file(tmp_path, "sink") if left == "handover" else checkpoint / left
    held.write_text("{}")

    with pytest.raises(OffsetsError, match="Connector sink has offsets already"):
        seed_connector_offsets(tmp_path, "sink", SINK_SEED)

    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(
        ["sink", checkpoint.name, held.name]
    )
