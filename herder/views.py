"""Read-only pictures of the cluster that the herder hands to REST."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from protocol.messages import Allocation, ConnectorTaskId


class WorkerState(StrEnum):
    """Where this worker is in its life, as `/health` and `/workers` show it."""

    WARMING = "warming"
    """Starting Spark before it joins the group, so that it can start a task at once."""
    JOINING = "joining"
    RUNNING = "running"
    LEAVING = "leaving"
    """Handing its work over to the other workers before it stops."""
    UNHEALTHY = "unhealthy"


@dataclass(frozen=True)
class ConnectorView:
    name: str
    config: Mapping[str, str]
    tasks: tuple[ConnectorTaskId, ...]
    type: str


@dataclass(frozen=True)
class ClusterView:
    """This worker's picture of the cluster: its own group state, and who runs what
    according to the status topic (which every worker reads)."""

    leader_url: str | None
    generation: int
    protocol_version: int
    scheduled_rebalance_ms: int
    workers: Mapping[str, Allocation]
    state: WorkerState
    """This worker's own state; only a worker knows its own."""
