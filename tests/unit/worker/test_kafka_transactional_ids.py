"""The transactional ids a task's Kafka sink keeps in its checkpoint: the same on every
start and every worker, never shared with another checkpoint, and every one a writer
used known to the next start (which fences them)."""

from __future__ import annotations

from pathlib import Path

from worker.kafka.transactions import TransactionalIds


def test_every_start_of_a_task_uses_the_same_ids_and_knows_every_id_used(
    tmp_path: Path,
) -> None:
    first = TransactionalIds(tmp_path / "task-0")
    prefix = first.prefix("orders-0")
    assert prefix.startswith("sparkherd-orders-0-")
    assert first.used(prefix) == [f"{prefix}-0"], "a first start probes with partition 0"

    assert first.for_partition(prefix, 3) == f"{prefix}-3"
    assert first.for_partition(prefix, 1) == f"{prefix}-1"

    again = TransactionalIds(tmp_path / "task-0")
    assert again.prefix("orders-0") == prefix
    assert again.used(prefix) == [f"{prefix}-0", f"{prefix}-1", f"{prefix}-3"]


def test_another_checkpoint_of_the_same_task_name_gets_other_ids(tmp_path: Path) -> None:
    """Two clusters on one Kafka, each with a connector `orders`: they must never fence
    each other's producers."""
    one = TransactionalIds(tmp_path / "cluster-a").prefix("orders-0")
    other = TransactionalIds(tmp_path / "cluster-b").prefix("orders-0")
    assert one != other
