"""Whether a connector's task checkpoints fit its config: what they are bound to
(`Connector.checkpoint_keys`, recorded by `worker.plugins.checkpoint_fingerprint`), and
the problem a config that changes it is refused with while they exist."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from worker.plugins.api import WHOLE_CONFIG, ConfigProblem, Connector
from worker.plugins.checkpoint_fingerprint import fingerprint, unfit, ways_forward
from worker.plugins.checkpoint_layout import checkpoint_dir_for, checkpointed_tasks
from worker.plugins.locations import normal_form


def checkpoint_fingerprint(
    connector: type[Connector], resolved: Mapping[str, str], cwd: Path
) -> dict[str, str]:
    """What the tasks' checkpoints of the `resolved` config are bound to; locations in
    the normal form the checks judge (text they refuse is compared as it is)."""
    locations = {*connector.output_path_keys, *connector.input_path_keys}

    def normal(location: str) -> str:
        try:
            return normal_form(location, cwd)
        except ValueError:
            return location

    return fingerprint(
        {
            key: normal(value) if key in locations else value
            for key in connector.checkpoint_keys
            if (value := resolved.get(key))
        }
    )


def unfit_checkpoints(
    checkpoint_root: Path, name: str, made_for: Mapping[str, str]
) -> list[ConfigProblem]:
    """The problem if a task checkpoint of the connector `name` (kept by name, across
    delete and re-create) was made for other values than `made_for` (a fingerprint)."""
    checkpoints = {
        task: checkpoint_dir_for(checkpoint_root, name, task)
        for task in checkpointed_tasks(checkpoint_root, name)
    }
    by_task = unfit(checkpoints, made_for)
    if not by_task:
        return []
    changed = sorted({key for keys in by_task.values() for key in keys})
    tasks = ", ".join(str(task) for task in sorted(by_task))
    which = (
        f"checkpoint of task {tasks} of connector {name} was"
        if len(by_task) == 1
        else f"checkpoints of tasks {tasks} of connector {name} were"
    )
    return [
        ConfigProblem(
            changed[0] if len(changed) == 1 else WHOLE_CONFIG,
            f"the {which} made for another {', '.join(changed)} (checkpoints are kept "
            "by connector name, across delete and re-create): its tasks would resume "
            "from positions that do not fit and fail at every start. "
            + ways_forward(name, changed),
        )
    ]
