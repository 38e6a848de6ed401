"""What the herder needs from whatever executes tasks: the one seam between herder and worker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from protocol.messages import ConnectorTaskId
from worker.plugins.task_state import TaskStatus
from worker.runtime.task_offsets import InitialOffsets, SourceOffset


class TaskOffsets(Protocol):
    """A connector's progress as its tasks keep it (a Spark task: in its checkpoint), for
    Kafka Connect's offsets API. Whatever storage it takes, the herder's loop only awaits.
    """

    async def committed_offsets(self, connector: str) -> list[SourceOffset]:
        """What each of the connector's tasks has committed; none for a task never run."""
        ...

    async def alter_offsets(
        self, connector: str, offsets: Mapping[int, Mapping[int, object | None]]
    ) -> None:
        """`offsets[task][source]`: the end offset to resume after; a task given only None
        offsets is reset. Raises `OffsetsError` saying what cannot be altered. Only while
        none of the connector's tasks runs."""
        ...

    async def reset_offsets(self, connector: str) -> None:
        """Every task starts from its sources' beginning. Only while none of them runs."""
        ...

    async def seed_offsets(self, connector: str, seed: InitialOffsets) -> None:
        """Before a new connector's config is written: its tasks start from `seed`
        (KIP-995). Raises `OffsetsError` when the name holds offsets already."""
        ...


class TaskRuntime(TaskOffsets, Protocol):
    """Starts and stops tasks; reports their states through the callback it was built with."""

    async def start_task(
        self,
        task_id: ConnectorTaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        generation: int,
    ) -> None: ...

    async def await_release(self, task_id: ConnectorTaskId) -> bool:
        """Until the task's previous owner, which gives it up in this same round, has
        released it; False when that took longer than an owner may take to stop a task."""
        ...

    async def stop_task(self, task_id: ConnectorTaskId) -> None: ...

    async def stop_all(self) -> None: ...

    async def warm_up(self) -> None:
        """Get ready to start a task at once (the herder calls it before it joins the
        group, so that work handed to this worker does not wait for start-up)."""
        ...

    async def lost_to_others(self) -> set[ConnectorTaskId]:
        """The held tasks another worker has claimed since this one started them (its
        start or its query was fenced): no longer this worker's, whatever their state."""
        ...

    def held(self) -> set[ConnectorTaskId]:
        """Every task started and not yet stopped, whatever its state."""
        ...

    def task_status(self, task_id: ConnectorTaskId) -> TaskStatus | None:
        """A held task's status, which lives here: the herder publishes what the runtime's
        callback tells it and asks this, never its own copy. None when not held."""
        ...


class ConnectorPlugins(Protocol):
    """The connector-level operations the herder delegates to the plugins.

    `validate` raises `ValueError` (or a subclass) whose message names the offending key.
    """

    def validate(self, config: Mapping[str, str]) -> None: ...

    def admit(
        self,
        config: Mapping[str, str],
        others: Mapping[str, Mapping[str, str]],
        *,
        will_run: bool,
    ) -> None:
        """Everything a config must pass before the leader stores it beside `others`
        (the other connectors' configs): `validate`, and checks across connectors and
        of the resources it names, its checkpoints included unless it will not run (it
        is STOPPED). Blocking: call it off the event loop."""
        ...

    def task_configs(self, config: Mapping[str, str]) -> list[dict[str, str]]: ...

    def connector_type(self, config: Mapping[str, str]) -> str: ...

    def takes_initial_offsets(self, config: Mapping[str, str]) -> bool:
        """Whether the connector's tasks can start from offsets given at create (KIP-995)."""
        ...

    def task_configs_refresh_s(self, config: Mapping[str, str]) -> float | None:
        """How often the leader recomputes this connector's task configs; None: only
        when its config changes."""
        ...
