"""Offsets read from and written to a Spark checkpoint laid out as Spark lays it out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.plugins.checkpoint_layout import checkpoint_query_id
from worker.runtime.checkpoint_offsets import (
    alter_offsets,
    altered_batches,
    committed_offsets,
    reset_offsets,
)
from worker.runtime.task_offsets import MAX_POSITION, OffsetsError, SourceOffset, check_offset

METADATA = '{"batchWatermarkMs":0,"batchTimestampMs":1795423176110,"conf":{}}'
COMMIT = 'v1\n{"nextBatchWatermarkMs":0}'


def checkpoint(tmp_path: Path, batches: list[list[str]], committed: int) -> Path:
    """`batches[i]`: the source lines of offsets/i; commits/0..committed exist."""
    root = tmp_path / "task-0"
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, sources in enumerate(batches):
        (root / "offsets" / str(batch)).write_text("\n".join(["v1", METADATA, *sources]))
        (root / "offsets" / f".{batch}.crc").write_bytes(b"crc")
    for batch in range(committed + 1):
        (root / "commits" / str(batch)).write_text(COMMIT)
    return root


def test_the_newest_committed_batch_is_what_a_task_has_committed(tmp_path: Path) -> None:
    root = checkpoint(
        tmp_path,
        [['{"offset":15}'], ['{"offset":30}'], ['{"offset":45}']],
        committed=1,
    )
    assert committed_offsets(root, 3) == [SourceOffset(3, 0, {"offset": 30})]


def test_a_checkpoint_without_a_commit_has_no_offsets(tmp_path: Path) -> None:
    assert committed_offsets(checkpoint(tmp_path, [['{"offset":15}']], committed=-1), 0) == []
    assert committed_offsets(tmp_path / "never-ran", 0) == []


def test_sources_without_an_offset_are_left_out(tmp_path: Path) -> None:
    root = checkpoint(tmp_path, [["-", '{"t":{"0":7}}']], committed=0)
    assert committed_offsets(root, 0) == [SourceOffset(0, 1, {"t": {"0": 7}})]


def test_altering_appends_one_committed_batch_and_rewrites_nothing(tmp_path: Path) -> None:
    root = checkpoint(tmp_path, [['{"a":1}', '{"b":1}'], ['{"a":2}', '{"b":2}']], committed=1)
    before = {p.name: p.read_bytes() for p in (root / "offsets").iterdir()}

    assert alter_offsets(root, {1: {"b": 100}}) == 2

    assert committed_offsets(root, 0) == [
        SourceOffset(0, 0, {"a": 2}),
        SourceOffset(0, 1, {"b": 100}),
    ]
    lines = (root / "offsets" / "2").read_text().split("\n")
    assert lines[:2] == ["v1", METADATA]
    assert (root / "commits" / "2").read_text() == COMMIT
    assert all((root / "offsets" / name).read_bytes() == data for name, data in before.items())
    assert not [p for p in root.rglob("*.tmp")]


def test_the_batches_altering_appended_are_listed_and_only_those(tmp_path: Path) -> None:
    """A file sink logs these, and only these, as empty: the sink never saw them."""
    root = checkpoint(tmp_path, [['{"offset":15}'], ['{"offset":30}']], committed=1)
    assert altered_batches(root) == frozenset()
    assert alter_offsets(root, {0: {"offset": 0}}) == 2
    assert alter_offsets(root, {0: {"offset": 5}}) == 3
    assert altered_batches(root) == {2, 3}
    assert not [p for p in root.rglob("*.tmp")]


def test_altering_after_an_uncommitted_batch_supersedes_it(tmp_path: Path) -> None:
    root = checkpoint(tmp_path, [['{"offset":15}'], ['{"offset":30}']], committed=0)
    assert alter_offsets(root, {0: {"offset": 0}}) == 2
    assert committed_offsets(root, 0) == [SourceOffset(0, 0, {"offset": 0})]
    assert json.loads((root / "offsets" / "2").read_text().split("\n")[2]) == {"offset": 0}
    assert altered_batches(root) == {1, 2}, "a file sink must log the superseded batch too"


def test_a_source_left_alone_keeps_its_committed_offset_not_an_uncommitted_one(
    tmp_path: Path,
) -> None:
    """Batch 1 was planned and interrupted: taking its end for source 1 would skip the
    records between the two batches' ends, which never reached the sink."""
    root = checkpoint(tmp_path, [['{"a":1}', '{"b":1}'], ['{"a":2}', '{"b":2}']], committed=0)
    assert alter_offsets(root, {0: {"a": 7}}) == 2
    assert committed_offsets(root, 0) == [
        SourceOffset(0, 0, {"a": 7}),
        SourceOffset(0, 1, {"b": 1}),
    ]


def test_a_checkpoint_that_never_committed_takes_every_source_or_none(tmp_path: Path) -> None:
    root = checkpoint(tmp_path, [['{"a":1}', '{"b":1}']], committed=-1)
    with pytest.raises(OffsetsError, match=r"has not committed a batch yet.*source 1"):
        alter_offsets(root, {0: {"a": 7}})
    assert alter_offsets(root, {0: {"a": 7}, 1: {"b": 0}}) == 1
    assert altered_batches(root) == {0, 1}


@pytest.mark.parametrize(
    ("batches", "offsets", "message"),
    [
        ([], {0: {"offset": 1}}, "has not started a batch yet"),
        ([['{"offset":15}']], {1: {"offset": 1}}, "there is no source 1"),
    ],
)
def test_offsets_that_cannot_apply_are_refused(
    tmp_path: Path, batches: list[list[str]], offsets: dict[int, object], message: str
) -> None:
    root = checkpoint(tmp_path, batches, committed=len(batches) - 1)
    with pytest.raises(OffsetsError, match=message):
        alter_offsets(root, offsets)


def test_reset_removes_the_checkpoint(tmp_path: Path) -> None:
    root = checkpoint(tmp_path, [['{"offset":15}']], committed=0)
    assert reset_offsets(root) is True
    assert not root.exists()
    assert reset_offsets(root) is False


@pytest.mark.parametrize(
    "offset",
    [
        {"offset": 0, "timestamp": 1795423176110},
        {"orders": {"0": 12, "1": MAX_POSITION}, "audit": {}},
        {"logOffset": 3},
        {},
    ],
    ids=["generator", "kafka", "files", "empty"],
)
def test_every_source_offset_shape_passes_the_check(offset: object) -> None:
    check_offset(offset)


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        (
            {"offset": float("nan")},
            "offset.offset must be an integer from 0 to 9223372036854775807 (got NaN)",
        ),
        ({"offset": float("inf")}, "(got Infinity)"),
        ({"offset": 1.5}, "(got 1.5)"),
        ({"offset": 5.0}, "(got 5.0)"),
        ({"offset": True}, "(got true)"),
        ({"offset": -1}, "(got -1)"),
        ({"offset": MAX_POSITION + 1}, "(got 9223372036854775808)"),
        ({"offset": "12"}, '(got "12")'),
        ({"offset": None}, "(got null)"),
        ({"orders": {"0": [1]}}, "offset.orders.0 must be an integer"),
        ({"orders": {"0": "x" * 100}}, '(got "' + "x" * 39 + "...)"),
        (12, "offset must be a JSON object, the source's own offset (got 12)"),
        ([{"offset": 1}], "offset must be a JSON object"),
    ],
)
def test_an_offset_spark_could_not_read_back_is_refused(offset: object, message: str) -> None:
    with pytest.raises(OffsetsError) as refused:
        check_offset(offset)
    assert message in str(refused.value)


def test_a_checkpoints_query_id_is_what_spark_wrote_in_its_metadata(tmp_path: Path) -> None:
    (tmp_path / "metadata").write_text(json.dumps({"id": "5f0c-1"}) + "\n")
    assert checkpoint_query_id(tmp_path) == "5f0c-1"
