"""The worker settings the herder acts on, filled in from the worker config by the process
wiring (`sparkherd.service`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from herder.requests import DEFAULT_REQUEST_TIMEOUT_S


@dataclass(frozen=True)
class HerderSettings:
    worker_id: str
    rest_url: str
    connect_protocol: str
    scheduled_rebalance_max_delay_ms: int
    heartbeat_interval_ms: int
    group_instance_id: str | None
    checkpoint_root: Path
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    warm_up: bool = True
    """Warm the runtime up before the first join (`worker.warmup.enabled`)."""
