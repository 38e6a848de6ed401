"""Partitions moving between a Kafka sink's tasks when `tasks.max` changes, without Spark
or a broker: which partitions moved, how positions merge, and the take-over over real
checkpoint directories as Spark writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest
from aiokafka import TopicPartition

from worker.connectors.files.file_sink import FIRST_BATCH_FILE, first_sink_batch
from worker.connectors.partition_moves import (
    PositionConflictError,
    merge_positions,
    must_take_over,
    split_handover,
    start_offsets,
)
from worker.connectors.partition_takeover import (
    SEED_FILE,
    UncertainBatchError,
    committed_positions,
    held_positions,
    starting_offsets,
)
from worker.kafka.source import parse_assignment, parse_starting
from worker.plugins.api import TaskContext
from worker.plugins.checkpoint_fingerprint import FINGERPRINT_FILE
from worker.plugins.checkpoint_layout import HANDOVER_FILE, checkpoint_dir_for
from worker.plugins.task_claims import claim, fence_stopping_run, runs_stopped
from worker.runtime.connector_offsets import reset_connector_offsets


def test_an_unchanged_split_or_an_added_partition_resumes_the_checkpoint() -> None:
    mine = {("a", 0), ("a", 2)}
    assert not must_take_over(mine, mine, {1: {("a", 1)}}, set())
    assert not must_take_over(mine | {("a", 4)}, mine, {1: {("a", 1)}}, set())
    assert not must_take_over(mine, set(), {}, set())


def test_a_partition_gone_elsewhere_held_elsewhere_or_handed_over_is_a_take_over() -> None:
    assert must_take_over({("a", 0)}, {("a", 0), ("a", 2)}, {}, set())
    assert must_take_over({("a", 2)}, set(), {0: {("a", 0), ("a", 2)}}, set())
    assert must_take_over({("a", 3)}, set(), {}, {("a", 3)})


def test_positions_merge_and_a_partition_at_two_positions_is_refused() -> None:
    merged = merge_positions([("file", {("a", 0): 5}), ("task 1", {("a", 0): 5, ("a", 1): 9})])
    assert merged == {("a", 0): 5, ("a", 1): 9}
    with pytest.raises(PositionConflictError, match=r"a:0 is at offset 5 in file and at 6"):
        merge_positions([("file", {("a", 0): 5}), ("task 1", {("a", 0): 6})])
    assert split_handover(merged, {("a", 1)}) == ({("a", 1): 9}, {("a", 0): 5})


def test_a_partition_nobody_read_starts_where_the_connector_says() -> None:
    parts = [("a", 0), ("a", 1)]
    assert start_offsets(parts, {("a", 0): 5}, "earliest") == {"a": {"0": 5, "1": -2}}
    assert start_offsets(parts, {("a", 0): 5}, "latest") == {"a": {"0": 5, "1": -1}}


def test_the_python_source_reads_starting_offsets_as_the_jvm_one() -> None:
    assert parse_starting("latest") == (-1, {})
    assert parse_starting('{"a": {"0": 5, "1": -1}}') == (
        -2,
        {TopicPartition("a", 0): 5, TopicPartition("a", 1): -1},
    )
    with pytest.raises(ValueError, match="earliest, latest or JSON"):
        parse_starting("yesterday")


def batch(root: Path, task: int, number: int, offsets: object, committed: bool = True) -> Path:
    """Batch `number` of a task's checkpoint, ending at `offsets`, as Spark logs it."""
    checkpoint = checkpoint_dir_for(root, "orders", task)
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(exist_ok=True)
    (checkpoint / "metadata").write_text('{"id":"q"}')
    header = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}'
    (checkpoint / "offsets" / str(number)).write_text(f"{header}\n{json.dumps(offsets)}")
    if committed:
        (checkpoint / "commits" / str(number)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return checkpoint


def context(root: Path, task: int, assign: str = "") -> TaskContext:
    return TaskContext(
        "orders", task, {}, {"kafka.assign": assign}, checkpoint_dir_for(root, "orders", task)
    )


def start(
    root: Path, task: int, assign: str, starting: Literal["earliest", "latest"] = "earliest"
) -> object:
    found = starting_offsets(context(root, task), parse_assignment(assign), starting, None)
    return found if found in ("earliest", "latest") else json.loads(found)


def test_two_to_four_tasks_each_partition_starts_where_it_was_committed(tmp_path: Path) -> None:
    batch(tmp_path, 0, 0, {"orders": {"0": 1, "2": 1}})
    batch(tmp_path, 0, 1, {"orders": {"0": 5, "2": 7}})
    batch(tmp_path, 1, 3, {"orders": {"1": 3, "3": 9}})
    assert start(tmp_path, 2, "orders:2") == {"orders": {"2": 7}}
    handover = tmp_path / "orders" / HANDOVER_FILE
    assert json.loads(handover.read_text()) == {"orders": {"0": 5}}
    assert held_positions(checkpoint_dir_for(tmp_path, "orders", 0)) == {}
    assert start(tmp_path, 1, "orders:1") == {"orders": {"1": 3}}
    assert start(tmp_path, 3, "orders:3") == {"orders": {"3": 9}}
    assert start(tmp_path, 0, "orders:0") == {"orders": {"0": 5}}
    assert json.loads(handover.read_text()) == {}
    # Started again before its first batch, a task starts from the same seed.
    assert start(tmp_path, 3, "orders:3") == {"orders": {"3": 9}}


def test_four_to_one_task_takes_every_partition_and_retires_the_others(tmp_path: Path) -> None:
    for task in range(4):
        checkpoint = batch(tmp_path, task, 2, {"orders": {str(task): 10 + task}})
        (checkpoint / FINGERPRINT_FILE).write_text("{}")
        claim(checkpoint, "w", 1).release()
    everything = "orders:0,orders:1,orders:2,orders:3"
    assert start(tmp_path, 0, everything) == {"orders": {"0": 10, "1": 11, "2": 12, "3": 13}}
    retired = checkpoint_dir_for(tmp_path, "orders", 3)
    assert sorted(p.name for p in retired.iterdir()) == ["claims", FINGERPRINT_FILE]
    assert (checkpoint_dir_for(tmp_path, "orders", 0) / SEED_FILE).is_file()


def test_a_task_whose_split_did_not_change_resumes_untouched(tmp_path: Path) -> None:
    own = batch(tmp_path, 0, 4, {"orders": {"0": 5}})
    batch(tmp_path, 1, 4, {"orders": {"1": 6}})
    assert start(tmp_path, 0, "orders:0", "latest") == "latest"
    assert (own / "offsets" / "4").is_file()


def test_a_partition_no_task_read_starts_at_starting_offsets(tmp_path: Path) -> None:
    batch(tmp_path, 0, 0, {"orders": {"0": 5, "1": 2}})
    assert start(tmp_path, 1, "orders:1,orders:3", "latest") == {"orders": {"1": 2, "3": -1}}


def test_a_planned_batch_counts_only_if_the_sink_has_it(tmp_path: Path) -> None:
    batch(tmp_path, 1, 0, {"orders": {"1": 4}})
    checkpoint = batch(tmp_path, 1, 1, {"orders": {"1": 8}}, committed=False)
    assert committed_positions(checkpoint, 1, lambda path, task, number: True) == {("orders", 1): 8}
    assert committed_positions(checkpoint, 1, lambda path, task, number: False) == {
        ("orders", 1): 4
    }
    with pytest.raises(UncertainBatchError, match=r"Task 1's checkpoint has batch 1 planned"):
        committed_positions(checkpoint, 1, None)


def test_a_take_over_waits_only_for_runs_that_got_past_their_own_take_over(
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "task-0"
    assert runs_stopped(checkpoint)
    running = claim(checkpoint, "w1", 4)
    running.mark_started()
    claim(checkpoint, "w2", 5)
    assert not runs_stopped(checkpoint), "a newer claim that began nothing fences, not stops"
    running.release()
    assert runs_stopped(checkpoint)


def test_a_run_that_does_not_stop_is_fenced_but_a_start_on_its_way_is_not(tmp_path: Path) -> None:
    checkpoint = tmp_path / "task-0"
    running = claim(checkpoint, "w1", 4)
    running.mark_started()
    fence_stopping_run(checkpoint, "w2", 5)
    assert running.fenced_by() is not None
    assert runs_stopped(checkpoint) is False, "fenced, not stopped"
    on_its_way = claim(checkpoint, "w3", 5)
    fence_stopping_run(checkpoint, "w2", 5)
    assert on_its_way.fenced_by() is None


def test_a_reset_forgets_handed_over_positions(tmp_path: Path) -> None:
    batch(tmp_path, 0, 0, {"orders": {"0": 5, "1": 2}})
    start(tmp_path, 1, "orders:1")
    assert (tmp_path / "orders" / HANDOVER_FILE).is_file()
    reset_connector_offsets(tmp_path, "orders")
    assert not (tmp_path / "orders" / HANDOVER_FILE).exists()


def test_a_fresh_checkpoint_numbers_sink_batches_after_the_output_log(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    assert first_sink_batch(fresh, 57) == 58
    assert first_sink_batch(fresh, 70) == 58, "recorded at the first start"
    assert (fresh / FIRST_BATCH_FILE).is_file()
    legacy = batch(tmp_path, 0, 3, {"orders": {"0": 5}})
    assert first_sink_batch(legacy, 57) == 0
