"""What the REST API needs from the herder, and the FastAPI dependency that hands it over.

REST owns this interface, so its routers run against anything that answers these calls:
`herder.herder.DistributedHerder` in a worker, an in-memory fake in the unit tests. The
herder does not know of it and matches it by shape; mypy checks that where the service
passes its herder to `create_app`.

A refused request surfaces as a `herder.errors.HerderError`, which the app turns into
Connect's status code and error body; reads and writes alike may raise one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Protocol

from fastapi import Depends, FastAPI, Request

from herder.config_store import RestartRequest, TargetState
from herder.metrics import WorkerMetrics
from herder.status_store import Status
from herder.views import ClusterView, ConnectorView, WorkerState
from protocol.messages import Allocation, ConnectorTaskId
from rest.loggers import ClusterLoggerSetter
from worker.runtime.checkpoint_offsets import SourceOffset


class HerderApi(ClusterLoggerSetter, Protocol):
    """The herder as REST sees it: reads answered from this worker's replay of the
    config and status topics, writes that only the leader carries out."""

    @property
    def worker_id(self) -> str: ...

    @property
    def ready(self) -> bool:
        """Joined the group and read the configs: `/health` answers 200."""

    @property
    def state(self) -> WorkerState: ...

    @property
    def unhealthy(self) -> str | None:
        """Why a worker that was ready is not any more (None while starting or ready)."""

    @property
    def owned(self) -> Allocation:
        """What this worker runs now."""

    def cluster_view(self) -> ClusterView: ...

    def metrics(self) -> WorkerMetrics: ...

    def connector_names(self) -> list[str]: ...

    def connector(self, name: str) -> ConnectorView: ...

    def task_configs(self, name: str) -> list[tuple[ConnectorTaskId, Mapping[str, str]]]: ...

    def connector_status(self, name: str) -> Status | None:
        """None while no worker has reported a state for the connector."""

    def task_status(self, task: ConnectorTaskId) -> Status | None:
        """None while no worker has reported a state; raises for a task the connector
        does not have."""

    def connector_offsets(self, name: str) -> list[SourceOffset]: ...

    async def create_connector(
        self, name: str, config: Mapping[str, str], initial_state: TargetState
    ) -> ConnectorView: ...

    async def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[bool, ConnectorView]:
        """Create or replace a connector's config; whether it was created."""

    async def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None]
    ) -> ConnectorView:
        """Merge `patch` into the config; a None value removes that key (KIP-477)."""

    async def delete_connector(self, name: str) -> None: ...

    async def restart(self, request: RestartRequest) -> None: ...

    async def set_target_state(self, name: str, state: TargetState) -> None: ...

    async def alter_connector_offsets(
        self, name: str, offsets: Mapping[int, Mapping[int, object | None]]
    ) -> None:
        """`offsets[task][source]`: the end offset to resume after; refused unless the
        connector is STOPPED."""

    async def reset_connector_offsets(self, name: str) -> None:
        """Refused unless the connector is STOPPED."""

    async def leave_for_good(self, timeout_s: float) -> bool:
        """Announce a permanent departure; whether this worker ran nothing any more
        within `timeout_s`. Raises `NoHandOff` when nobody could take its work."""


def provide_herder(app: FastAPI, herder: HerderApi) -> None:
    """Make `herder` the one that `HerderDep` hands to `app`'s routes."""
    app.state.herder = herder


def current_herder(request: Request) -> HerderApi:
    herder: HerderApi = request.app.state.herder
    return herder


HerderDep = Annotated[HerderApi, Depends(current_herder)]
"""A route parameter typed `HerderDep` receives the app's herder."""
