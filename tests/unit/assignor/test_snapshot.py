from __future__ import annotations

from herder.assignor import ClusterSnapshot
from protocol.messages import ConnectorTaskId


def test_a_stopped_connector_with_no_tasks_is_still_configured() -> None:
    snapshot = ClusterSnapshot(config_offset=7, task_counts={"A": 2, "S": 0})
    assert snapshot.all_connectors() == {"A", "S"}
    assert snapshot.all_tasks() == {ConnectorTaskId("A", 0), ConnectorTaskId("A", 1)}
    configured = snapshot.configured()
    assert configured.connectors == {"A", "S"}
    assert configured.tasks == snapshot.all_tasks()
