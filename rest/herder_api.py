"""What the REST API needs from the herder, and the FastAPI dependencies that hand it over.

REST owns this interface, so its routers run against anything that answers these calls:
`herder.herder.DistributedHerder` in a worker, an in-memory one in the unit tests. The
herder does not know of it and matches it by shape; mypy checks that where the service
passes its herder to `create_app`. The cluster operations (connectors, statuses,
offsets, restarts, log levels) are the herder's `ClusterAdmin` itself (`AdminDep`), so a
new operation is a method there and a route here, with nothing in between.

A refused request surfaces as a `herder.errors.HerderError`, which the app turns into
Connect's status code and error body; reads and writes alike may raise one.
"""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import Depends, FastAPI, Request

from herder.admin.cluster_admin import ClusterAdmin
from herder.metrics import WorkerMetrics
from herder.views import ClusterView, WorkerState
from protocol.messages import Allocation


class HerderApi(Protocol):
    """The herder as REST sees it: this worker's own state, and its `admin`, whose reads
    answer from this worker's replay of the config and status topics and whose writes
    only the leader carries out."""

    @property
    def admin(self) -> ClusterAdmin: ...

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

    async def leave_for_good(self, timeout_s: float) -> bool:
        """Announce a permanent departure; whether this worker ran nothing any more
        within `timeout_s`. Raises `NoHandOff` when nobody could take its work."""


def provide_herder(app: FastAPI, herder: HerderApi) -> None:
    """Make `herder` the one that `HerderDep` and `AdminDep` hand to `app`'s routes."""
    app.state.herder = herder


def current_herder(request: Request) -> HerderApi:
    herder: HerderApi = request.app.state.herder
    return herder


def current_admin(request: Request) -> ClusterAdmin:
    return current_herder(request).admin


HerderDep = Annotated[HerderApi, Depends(current_herder)]
"""A route parameter typed `HerderDep` receives the app's herder."""
AdminDep = Annotated[ClusterAdmin, Depends(current_admin)]
"""A route parameter typed `AdminDep` receives the cluster operations of the app's herder."""
