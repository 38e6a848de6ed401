"""Read-only pictures of the cluster that the herder hands to REST."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from protocol.messages import Allocation, ConnectorTaskId


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
