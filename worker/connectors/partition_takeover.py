"""How a Kafka sink task starts when its partitions moved between tasks (`tasks.max`
changed): it takes each over at the offset the checkpoint that read it committed.

Spark's Kafka source will not resume a checkpoint whose partitions changed, so a task
whose partitions moved starts a fresh checkpoint, seeded with the positions of its
partitions (`startingOffsets`, which Spark reads only for a checkpoint without batches;
the seed is kept beside the checkpoint, `SEED_FILE`, for a start cut short before its
first batch). The positions come from the checkpoints that read those partitions: every
checkpoint holding one of them (the task's own included) is read, its positions all go to
the connector's hand-over file (`worker.plugins.checkpoint_layout.HANDOVER_FILE`), and it
is retired (Spark's files removed, the claims kept), so no later start resumes it; the
task then takes its own partitions out of the file, and the tasks given the others take
theirs when they start. Decisions are `worker.connectors.partition_moves`'s.

One take-over at a time per connector (a lock file beside the tasks' checkpoints, which
every worker sharing `checkpoint.root` sees), and only once the last run on each other
task's checkpoint it reads has stopped (its claim released: `task_claims.runs_stopped`),
so that no batch commits behind its back; its own checkpoint's last run has stopped
before the task was started again. Every start marks its claim as past this point.

A batch Spark planned but did not log as committed may or may not be in the sink (a
stop can cut a batch between the sink's commit and Spark's log): the sink is asked
(`SinkHasBatch`); one that cannot tell fails the start instead.

Exactly once across the move: a fresh checkpoint has a new query id and counts batches
from 0, which is what the table sinks key their commits by (Delta's `txnAppId`, Iceberg's
snapshot property, kafka-to-jdbc's ledger), and the file sink numbers its commits after
the last one in its directory (`worker.connectors.files.file_sink`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from aiokafka import TopicPartition

from worker.connectors.partition_moves import (
    Offsets,
    Positions,
    as_offsets,
    holding,
    merge_positions,
    must_take_over,
    positions_of,
    split_handover,
    start_offsets,
)
from worker.kafka.batch_bound import BatchBound
from worker.plugins.api import TaskContext
from worker.plugins.checkpoint_fingerprint import FINGERPRINT_FILE
from worker.plugins.checkpoint_layout import HANDOVER_FILE
from worker.plugins.task_claims import CLAIMS_DIR, Claim, fence_stopping_run, runs_stopped
from worker.runtime.checkpoint_offsets import (
    batch_end_offsets,
    newest_committed_batch,
    newest_planned_batch,
)

SEED_FILE: Final = "sparkherd-start-offsets.json"
LOCK_FILE: Final = ".handover.lock"
KEPT: Final = frozenset({CLAIMS_DIR, FINGERPRINT_FILE})
"""What a retired checkpoint keeps: its claims still fence a zombie of its old run."""
RELEASE_WAIT_S: Final = 60.0
"""How long a take-over waits for the last runs on the checkpoints it reads to stop,
before it fences them (`task_claims.fence_stopping_run`)."""
LOCK_STALE_S: Final = 300.0
"""A lock this old was left by a worker that died while taking over."""
POLL_S: Final = 0.1

SinkHasBatch = Callable[[Path, int, int], bool]
"""Whether the sink committed batch `batch` of task `task`'s checkpoint `checkpoint`:
asked of a batch that Spark planned but did not log as committed."""

log = logging.getLogger(__name__)


class UncertainBatchError(RuntimeError):
    """A checkpoint to take over has a batch its sink may or may not have committed."""


def starting_offsets(
    context: TaskContext,
    assigned: Sequence[TopicPartition],
    starting: Literal["earliest", "latest"],
    sink_has_batch: SinkHasBatch | None,
) -> str:
    """Blocking: what the task's Kafka source starts from where its checkpoint has no
    batch yet: `starting`, or the positions it took over (as JSON)."""
    parts = [(tp.topic, tp.partition) for tp in assigned]
    own = context.checkpoint_dir
    with _connector_lock(own.parent):
        others = {t: p for t, p in context.connector_checkpoints().items() if t != context.task}
        held = {task: set(held_positions(path)) for task, path in others.items()}
        handover = own.parent / HANDOVER_FILE
        handed = positions_of(_read_json(handover))
        if context.claim is not None:
            context.claim.mark_started()
        if not must_take_over(set(parts), set(held_positions(own)), held, set(handed)):
            seed = _read_json(own / SEED_FILE)
            if seed is None:
                return starting
            return json.dumps(start_offsets(parts, positions_of(seed), starting))
        sources = {task: others[task] for task in holding(set(parts), held)}
        _await_stopped_runs(sources, context.claim)
        sources[context.task] = own
        merged = merge_positions(
            [
                ("the connector's hand-over file", handed),
                *(
                    (f"task {task}'s checkpoint", committed_positions(path, task, sink_has_batch))
                    for task, path in sorted(sources.items())
                ),
            ]
        )
        _write_json(handover, as_offsets(merged))
        for path in sources.values():
            retire(path)
        taken, left = split_handover(merged, set(parts))
        offsets = start_offsets(parts, taken, starting)
        _write_json(own / SEED_FILE, offsets)
        _write_json(handover, as_offsets(left))
    log.info(
        "Task %s of connector %s takes over %s from the checkpoints of tasks %s",
        context.task,
        context.connector,
        offsets,
        sorted(sources),
    )
    return json.dumps(offsets)


def batch_bound(checkpoint: Path, max_offsets: int) -> BatchBound:
    """Each batch's bound, with where the next batch begins: after the newest batch the
    checkpoint planned (read after `starting_offsets`, which may have retired it)."""
    planned = newest_planned_batch(checkpoint)
    resume = None if planned < 0 else json.dumps(batch_end_offsets(checkpoint, planned)[0])
    return BatchBound(max_offsets, resume)


def held_positions(checkpoint: Path) -> Positions:
    """The partitions a checkpoint reads, with its newest planned end offsets (or its
    seed, before its first batch)."""
    planned = newest_planned_batch(checkpoint)
    if planned < 0:
        return positions_of(_read_json(checkpoint / SEED_FILE))
    return positions_of(batch_end_offsets(checkpoint, planned)[0])


def committed_positions(
    checkpoint: Path, task: int, sink_has_batch: SinkHasBatch | None
) -> Positions:
    """Where each partition of a stopped checkpoint resumes: after its newest batch the
    sink holds. Partitions it has not read yet (a seed's earliest or latest) have none."""
    planned = newest_planned_batch(checkpoint)
    committed = newest_committed_batch(checkpoint)
    if planned > committed:
        if sink_has_batch is None:
            raise UncertainBatchError(
                f"Task {task}'s checkpoint has batch {planned} planned but not logged as "
                "committed, and this sink cannot tell whether it wrote it, so its "
                "partitions cannot move without a risk of reading records twice. Give "
                "tasks.max back its previous value until that task has run a batch, "
                "then change it again"
            )
        if sink_has_batch(checkpoint, task, planned):
            committed = planned
    if committed < 0:
        seed = positions_of(_read_json(checkpoint / SEED_FILE))
        return {part: offset for part, offset in seed.items() if offset >= 0}
    return positions_of(batch_end_offsets(checkpoint, committed)[0])


def retire(checkpoint: Path) -> None:
    """Remove Spark's files (and the seed) from a checkpoint: a start finds it empty."""
    if not checkpoint.is_dir():
        return
    for entry in checkpoint.iterdir():
        if entry.name in KEPT:
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _await_stopped_runs(sources: Mapping[int, Path], own: Claim | None) -> None:
    """Until the last run on each checkpoint has stopped; after `RELEASE_WAIT_S`, those
    still running are fenced (as the herder's hand-over of a task does) and the take-over
    goes on."""
    deadline = time.monotonic() + RELEASE_WAIT_S
    waiting = dict(sources)
    while waiting:
        waiting = {task: path for task, path in waiting.items() if not runs_stopped(path)}
        if waiting and time.monotonic() >= deadline:
            log.warning(
                "The last runs of tasks %s did not stop within %.0f s; fencing them and "
                "taking their partitions over",
                sorted(waiting),
                RELEASE_WAIT_S,
            )
            for path in waiting.values():
                if own is not None:
                    fence_stopping_run(path, own.worker_id, own.generation)
            return
        if waiting:
            time.sleep(POLL_S)


@contextlib.contextmanager
def _connector_lock(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    lock = directory / LOCK_FILE
    while True:
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            with contextlib.suppress(FileNotFoundError):
                if time.time() - lock.stat().st_mtime > LOCK_STALE_S:
                    lock.unlink()
            time.sleep(POLL_S)
            continue
        os.close(fd)
        break
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _write_json(path: Path, value: Offsets) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(value, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)
