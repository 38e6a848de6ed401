"""What the herder counts for `/metrics`: rebalances, hand-offs, self-fencing, and a
snapshot of this worker's work and state.

Kafka Connect reports the same facts as JMX metrics (its worker, worker-rebalance and
connector metric groups); `rest/metrics.py` renders them under the names Strimzi's
dashboards and alerts read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from herder.views import WorkerState
from protocol.messages import ConnectorTaskId
from worker.plugins.task_state import StartupCounts


@dataclass
class RebalanceStats:
    """Rebalances this worker took part in: from the join that started one to the
    assignment applied. Times are the injected clock's seconds."""

    completed: int = 0
    total_s: float = 0.0
    max_s: float = 0.0
    started_at: float | None = None
    last_completed_at: float | None = None

    def begin(self, now: float) -> None:
        """A join starts; a retried join is still the same rebalance."""
        if self.started_at is None:
            self.started_at = now

    def end(self, now: float) -> None:
        if self.started_at is None:
            return
        took = max(0.0, now - self.started_at)
        self.completed += 1
        self.total_s += took
        self.max_s = max(self.max_s, took)
        self.started_at = None
        self.last_completed_at = now

    def view(self, now: float) -> RebalanceView:
        return RebalanceView(
            completed=self.completed,
            rebalancing=self.started_at is not None,
            avg_time_ms=1000 * self.total_s / self.completed if self.completed else 0.0,
            max_time_ms=1000 * self.max_s,
            time_since_last_ms=(
                -1.0
                if self.last_completed_at is None
                else 1000 * max(0.0, now - self.last_completed_at)
            ),
        )


@dataclass(frozen=True)
class RebalanceView:
    completed: int
    rebalancing: bool
    avg_time_ms: float
    max_time_ms: float
    time_since_last_ms: float
    """-1 before the first rebalance completed, as Kafka Connect reports it."""


@dataclass(frozen=True)
class WorkerMetrics:
    """One look at this worker, for one scrape."""

    state: WorkerState
    generation: int
    protocol_version: int
    scheduled_rebalance_ms: int
    connectors: Mapping[str, str]
    """Connectors this worker runs -> their state, lower-case (`running`, `paused`...)."""
    tasks: Mapping[ConnectorTaskId, str]
    """Tasks this worker runs -> their state, lower-case."""
    rebalance: RebalanceView
    connector_startups: StartupCounts
    hand_offs: int
    """Planned stops that handed this worker's work over."""
    self_fencings: int
    """Times this worker stopped its work because the coordinator was out of reach."""
    failed_rounds: int
    """JoinGroup or SyncGroup rounds that failed (a group that cannot settle counts up)."""
    auto_restarts: int
    """Automatic restarts of failed connectors and tasks begun on this worker."""
    refused_config_records: int
    """Config topic records this worker read and did not apply (`herder.stores.config_store`)."""
