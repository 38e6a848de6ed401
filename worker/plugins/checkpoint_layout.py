"""Where each task's checkpoint lives: `<checkpoint.root>/<connector>/task-<i>`.

Every worker sharing `checkpoint.root` must compute the same directory for a task, or a
task moved to another worker would start over; the runtime, the herder's offset
operations and connectors checking their split all go through here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from worker.plugins.names import check_name

TASK_DIR_PREFIX: Final = "task-"
"""How a task's directory is named, in `checkpoint.root` and in a file sink's output."""
HANDOVER_FILE: Final = "handed-over-offsets.json"
"""In a connector's directory of `checkpoint.root`: the committed positions of partitions
whose task changed and whose new task has not taken them yet (a Kafka sink's tasks hand
partitions over this way when `tasks.max` changes: `worker.connectors.partition_takeover`)."""


def checkpoint_dir_for(checkpoint_root: Path, connector: str, task: int) -> Path:
    """`<checkpoint_root>/<connector>/task-<i>`: the same on every worker sharing the root.

    A connector name is user input: one that breaks the name rule (`worker.plugins.names`) is
    refused rather than letting it point a checkpoint somewhere else.
    """
    return checkpoint_root / check_name(connector) / f"{TASK_DIR_PREFIX}{task}"


def handover_file(checkpoint_root: Path, connector: str) -> Path:
    return checkpoint_dir_for(checkpoint_root, connector, 0).parent / HANDOVER_FILE


def checkpointed_tasks(checkpoint_root: Path, connector: str) -> list[int]:
    """The task numbers that have a checkpoint directory under `checkpoint_dir_for`."""
    root = checkpoint_dir_for(checkpoint_root, connector, 0).parent
    names = [path.name for path in root.iterdir()] if root.is_dir() else []
    return sorted(
        int(name.removeprefix(TASK_DIR_PREFIX))
        for name in names
        if name.startswith(TASK_DIR_PREFIX) and name.removeprefix(TASK_DIR_PREFIX).isdigit()
    )


def checkpoint_query_id(checkpoint_dir: Path) -> str:
    """The id Spark gave the query whose checkpoint this is (`<checkpoint>/metadata`,
    written when a query is first created on it, before its first batch): the same on
    every restart and every worker, new after the checkpoint is reset. A table sink keys
    its idempotent commits by it (Delta's own streaming sink does), rather than by
    `query.id` in Python: the first batch may run before `start()` has returned."""
    first = (checkpoint_dir / "metadata").read_text(encoding="utf-8").splitlines()[0]
    return str(json.loads(first)["id"])
