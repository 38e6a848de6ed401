"""Load-aware placement in a simulated group: workers report a load from how many tasks
their driver runs on cadence, and the leader stops giving tasks to an overloaded one.

`settle` checks the quiet-state invariants with the closed workers the last round saw
(`SimCluster.closed_by_load`); the stability guard checks that a connector created in a
settled group stops nothing else, loads or not.
"""

from __future__ import annotations

from tests.simulation.cluster import SimCluster
from tests.simulation.worker import Rebalancing


def task_counts(cluster: SimCluster) -> dict[str, int]:
    return {
        name: sum(not isinstance(item, str) for item in items)
        for name, items in cluster.allocations().items()
    }


def grown_one_connector_at_a_time(capacities: dict[str, int | None]) -> SimCluster:
    """Three workers of these capacities, then twelve one-task connectors created one after
    another, each settled before the next."""
    cluster = SimCluster(Rebalancing.IDENTITY_AWARE)
    for name, capacity in capacities.items():
        cluster.join(name, capacity=capacity)
    cluster.settle()
    for n in range(12):
        cluster.put_connector(f"C{n:02d}", 1)
        cluster.settle()
    return cluster


def test_a_small_worker_stops_getting_tasks_once_it_is_overloaded() -> None:
    cluster = grown_one_connector_at_a_time({"W1": 2, "W2": 50, "W3": 50})
    assert task_counts(cluster) == {"W1": 3, "W2": 5, "W3": 4}
    assert cluster.closed_by_load(cluster.allocations()) == {"W1"}


def test_without_loads_the_same_growth_is_balanced_by_counts() -> None:
    cluster = grown_one_connector_at_a_time({"W1": None, "W2": None, "W3": None})
    assert task_counts(cluster) == {"W1": 4, "W2": 4, "W3": 4}


def test_once_every_worker_is_overloaded_counts_decide_again() -> None:
    cluster = grown_one_connector_at_a_time({"W1": 1, "W2": 2, "W3": 2})
    assert task_counts(cluster) == {"W1": 4, "W2": 4, "W3": 4}
    assert cluster.closed_by_load(cluster.allocations()) == set()


def test_the_work_of_a_crashed_worker_goes_to_the_worker_with_room() -> None:
    cluster = SimCluster(Rebalancing.IDENTITY_AWARE, max_delay_ms=10_000)
    cluster.join("W1", capacity=2)
    cluster.join("W2", "W3", capacity=50)
    cluster.settle()
    cluster.put_connector("A", 9)
    cluster.settle()
    assert task_counts(cluster) == {"W1": 3, "W2": 3, "W3": 3}
    cluster.crash("W3")
    cluster.settle()
    assert task_counts(cluster) == {"W1": 3, "W2": 6}
