"""Assignors: who runs which connector and task after a rebalance.

The leader's herder builds a `GroupRound` and calls `assign`; the answer maps member ids to
their `Assignment`. `EagerAssignor` serves protocol version 0; the
`IncrementalCooperativeAssignor` serves versions 1 and 2 (and falls back to eager for 0).
"""

from herder.assignor.contract import Assignor
from herder.assignor.eager import EagerAssignor
from herder.assignor.incremental import IncrementalCooperativeAssignor, inherited_deadline
from herder.assignor.snapshot import ClusterSnapshot, GroupRound, HandedOver

__all__ = [
    "Assignor",
    "ClusterSnapshot",
    "EagerAssignor",
    "GroupRound",
    "HandedOver",
    "IncrementalCooperativeAssignor",
    "inherited_deadline",
]
