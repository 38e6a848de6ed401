"""The config topic: an append-only log of connector task counts, read by offset."""

from __future__ import annotations

from herder.stores.config_records import ConfigSnapshot
from protocol.messages import ConnectorTaskId

Item = str | ConnectorTaskId
"""A connector (its name) or one of its tasks."""


class ConfigLog:
    """Record n sets a connector's task count (None deletes it); offset = records read."""

    def __init__(self) -> None:
        self._records: list[tuple[str, int | None]] = []
        self._states: list[dict[str, int]] = [{}]

    @property
    def end(self) -> int:
        return len(self._records)

    def put(self, connector: str, tasks: int | None) -> int:
        state = dict(self._states[-1])
        if tasks is None:
            state.pop(connector, None)
        else:
            state[connector] = tasks
        self._records.append((connector, tasks))
        self._states.append(state)
        return self.end

    def task_counts(self, offset: int | None = None) -> dict[str, int]:
        return dict(self._states[self.end if offset is None else offset])

    def snapshot(self, offset: int) -> ConfigSnapshot:
        """The herder's view at `offset`: each connector with that many (empty) task
        configs, which is all the leader's planning reads of them."""
        counts = self._states[offset]
        return ConfigSnapshot(
            offset,
            connectors={name: {} for name in counts},
            task_configs={name: ({},) * tasks for name, tasks in counts.items()},
        )

    def items(self, offset: int | None = None) -> set[Item]:
        counts = self._states[self.end if offset is None else offset]
        found: set[Item] = set(counts)
        found.update(ConnectorTaskId(c, t) for c, n in counts.items() for t in range(n))
        return found
