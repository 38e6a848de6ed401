"""Task configs as the config topic stores them: placeholders put back, the worker's
inherited defaults left out, and the whole within what one record may carry."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

from worker.config.providers import has_placeholder
from worker.plugins.api import WHOLE_CONFIG, ConfigProblem, ConnectorConfigError

MAX_TASK_CONFIGS_BYTES: Final = 900_000
"""What one connector's task configs may add up to on the config topic: below the ~1 MB
a broker accepts in one record, so no single task config can be refused either, and one
connector cannot flood the topic (a 990 KB config times 20 tasks would be 19.8 MB)."""


def stored_task_configs(
    tasks: Sequence[Mapping[str, str]],
    raw: Mapping[str, str],
    resolved: Mapping[str, str],
    inherited: Mapping[str, str],
) -> list[dict[str, str]]:
    """The plugin's `tasks` (made from the `resolved` config) in their stored form;
    refused when together they would not fit the config topic."""
    configs = [_stored_form(task, raw, resolved, inherited) for task in tasks]
    size = sum(len(json.dumps({"properties": c}).encode("utf-8")) for c in configs)
    if size > MAX_TASK_CONFIGS_BYTES:
        raise ConnectorConfigError(
            [
                ConfigProblem(
                    WHOLE_CONFIG,
                    f"its {len(configs)} task configs would take {size} bytes on the "
                    f"config topic; the limit is {MAX_TASK_CONFIGS_BYTES} (fewer "
                    "tasks.max or a smaller config)",
                )
            ]
        )
    return configs


def _stored_form(
    task: Mapping[str, str],
    raw: Mapping[str, str],
    resolved: Mapping[str, str],
    inherited: Mapping[str, str],
) -> dict[str, str]:
    """A task config as stored: a value the plugin copied from a setting that held a
    placeholder gets the placeholder back, and one it copied from the worker's defaults
    is left out (each worker adds its own again when the task starts)."""
    return {
        key: raw[key]
        if key in raw and has_placeholder(raw[key]) and value == resolved.get(key)
        else value
        for key, value in task.items()
        if key in raw or inherited.get(key) != value
    }
