"""`/connectors/{c}/offsets` (KIP-875) against a fake herder: what a caller reads, what
reaches the herder, and the refusals of a connector that is not STOPPED."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from herder.stores.config_records import TargetState
from protocol.messages import ConnectorTaskId
from rest.offsets import ALTERED, RESET
from tests.unit.rest.fake_herder import FakeHerder
from worker.plugins.task_state import TaskState
from worker.runtime.task_offsets import SourceOffset

NOT_STOPPED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can "
    "be done for the specified connector by issuing a 'PUT' request to the "
    "'/connectors/gen/stop' endpoint"
)


def offsets(*entries: tuple[dict[str, Any], Any]) -> dict[str, Any]:
    return {"offsets": [{"partition": p, "offset": o} for p, o in entries]}


def test_get_shows_each_task_and_source(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", tasks=2)
    herder.offsets["gen"] = [
        SourceOffset(task=0, source=0, offset={"offset": 40, "timestamp": 7}),
        SourceOffset(task=1, source=2, offset={"orders": {"0": 12}}),
    ]
    answer = client.get("/connectors/gen/offsets")
    assert answer.status_code == 200
    assert answer.json() == offsets(
        ({"task": 0, "source": 0}, {"offset": 40, "timestamp": 7}),
        ({"task": 1, "source": 2}, {"orders": {"0": 12}}),
    )


def test_a_connector_that_never_ran_has_no_offsets(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen")
    assert client.get("/connectors/gen/offsets").json() == {"offsets": []}


def test_alter_hands_the_offsets_by_task_and_source(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", tasks=2, target=TargetState.STOPPED)
    answer = client.patch(
        "/connectors/gen/offsets",
        json=offsets(
            ({"task": 0}, {"offset": 5}),
            ({"task": 0, "source": 1}, None),
            ({"task": 1, "source": 0}, {"offset": 9}),
        ),
    )
    assert answer.status_code == 200
    assert answer.json() == {"message": ALTERED}
    assert herder.altered == [("gen", {0: {0: {"offset": 5}, 1: None}, 1: {0: {"offset": 9}}})]


def test_reset_answers_with_its_message(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", target=TargetState.STOPPED)
    answer = client.delete("/connectors/gen/offsets")
    assert answer.status_code == 200
    assert answer.json() == {"message": RESET}
    assert herder.reset == ["gen"]


@pytest.mark.parametrize("target", [TargetState.STARTED, TargetState.PAUSED])
def test_offsets_of_a_connector_that_is_not_stopped_are_not_changed(
    client: TestClient, herder: FakeHerder, target: TargetState
) -> None:
    herder.add("gen", target=target)
    altered = client.patch("/connectors/gen/offsets", json=offsets(({"task": 0}, None)))
    reset = client.delete("/connectors/gen/offsets")
    for answer in (altered, reset):
        assert answer.status_code == 400
        assert answer.json() == {"error_code": 400, "message": NOT_STOPPED}
    assert herder.altered == []
    assert herder.reset == []


def test_a_stopped_connector_whose_task_still_runs_answers_409(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.add("gen", target=TargetState.STOPPED)
    herder.report(ConnectorTaskId("gen", 0), TaskState.RUNNING)
    answer = client.delete("/connectors/gen/offsets")
    assert answer.status_code == 409
    assert answer.json()["error_code"] == 409
    assert "task(s) [0] still report RUNNING" in answer.json()["message"]


def test_a_stopped_connectors_status_shows_a_task_until_it_has_stopped(
    client: TestClient, herder: FakeHerder
) -> None:
    """So that waiting for "STOPPED with no task" is waiting until the offsets can change:
    the status listed a STOPPED connector's tasks from its task configs alone (none)."""
    herder.add("gen", target=TargetState.STOPPED)
    herder.report(ConnectorTaskId("gen", 0), TaskState.RUNNING)
    tasks = client.get("/connectors/gen/status").json()["tasks"]
    assert [(t["id"], t["state"]) for t in tasks] == [(0, "RUNNING")]

    herder.report(ConnectorTaskId("gen", 0), TaskState.UNASSIGNED)
    assert client.get("/connectors/gen/status").json()["tasks"] == []
    assert client.delete("/connectors/gen/offsets").status_code == 200


@pytest.mark.parametrize(
    ("method", "body"),
    [("PATCH", offsets(({"task": 0}, None))), ("DELETE", None)],
)
def test_changing_offsets_of_an_unknown_connector_answers_404(
    client: TestClient, method: str, body: dict[str, Any] | None
) -> None:
    answer = client.request(method, "/connectors/nope/offsets", json=body)
    assert answer.status_code == 404
    assert answer.json() == {"error_code": 404, "message": "Connector nope not found"}


@pytest.mark.parametrize(
    "partition",
    [
        {},
        {"task": -1},
        {"task": True},
        {"task": "0"},
        {"task": 0, "source": 1.5},
        {"task": 0, "x": 1},
    ],
)
def test_a_partition_that_names_no_task_and_source_answers_400(
    client: TestClient, herder: FakeHerder, partition: dict[str, Any]
) -> None:
    herder.add("gen", target=TargetState.STOPPED)
    body = offsets(({"task": 0}, None), (partition, None))
    answer = client.patch("/connectors/gen/offsets", json=body)
    assert answer.status_code == 400
    assert answer.json()["error_code"] == 400
    assert answer.json()["message"].startswith("offsets[1].partition must be")
    assert herder.altered == []


def test_altering_no_offsets_answers_400(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", target=TargetState.STOPPED)
    answer = client.patch("/connectors/gen/offsets", json={"offsets": []})
    assert answer.status_code == 400
    assert answer.json() == {"error_code": 400, "message": "Partitions to modify cannot be empty"}
    assert herder.altered == []


@pytest.mark.parametrize(
    ("offset", "shown"),
    [
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("1e400", "Infinity"),
        ("2.5", "2.5"),
        ("true", "true"),
        ("-3", "-3"),
        ("9223372036854775808", "9223372036854775808"),
        ('"7"', '"7"'),
    ],
)
def test_an_offset_that_is_no_position_answers_400_and_alters_nothing(
    client: TestClient, herder: FakeHerder, offset: str, shown: str
) -> None:
    """Python's JSON parser reads `NaN` and `Infinity`, so the body is sent as written."""
    herder.add("gen", tasks=2, target=TargetState.STOPPED)
    body = (
        '{"offsets": [{"partition": {"task": 0}, "offset": {"offset": 5}}, '
        f'{{"partition": {{"task": 1}}, "offset": {{"offset": {offset}, "timestamp": 0}}}}]}}'
    )
    answer = client.patch(
        "/connectors/gen/offsets", content=body, headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 400
    assert answer.json() == {
        "error_code": 400,
        "message": "offsets[1].offset.offset must be an integer from 0 to "
        f"9223372036854775807 (got {shown})",
    }
    assert herder.altered == []


def test_the_largest_position_is_accepted(client: TestClient, herder: FakeHerder) -> None:
    herder.add("gen", target=TargetState.STOPPED)
    body = offsets(({"task": 0}, {"orders": {"0": 2**63 - 1}}))
    answer = client.patch("/connectors/gen/offsets", json=body)
    assert answer.status_code == 200
    assert herder.altered == [("gen", {0: {0: {"orders": {"0": 2**63 - 1}}}})]


SINK = {"topics": "orders"}
SINK_COMMITTED = [
    SourceOffset(task=0, source=0, offset={"orders": {"0": 12, "1": 30}}),
    SourceOffset(task=1, source=0, offset={"orders": {"2": 7}}),
]


def test_a_sinks_offsets_are_read_and_altered_by_kafka_partition(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.add("sink", tasks=2, target=TargetState.STOPPED, extra=SINK)
    herder.offsets["sink"] = SINK_COMMITTED
    shown = client.get("/connectors/sink/offsets").json()
    assert shown["offsets"][0] == {
        "partition": {"kafka_topic": "orders", "kafka_partition": 0},
        "offset": {"kafka_offset": 12},
    }
    answer = client.patch(
        "/connectors/sink/offsets",
        json=offsets(({"kafka_topic": "orders", "kafka_partition": 2}, {"kafka_offset": 3})),
    )
    assert answer.status_code == 200
    assert herder.altered == [("sink", {1: {0: {"orders": {"2": 3}}}})]


def test_a_sinks_offsets_are_still_altered_by_task_as_before_they_took_connects_shape(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.add("sink", tasks=2, target=TargetState.STOPPED, extra=SINK)
    herder.offsets["sink"] = SINK_COMMITTED
    answer = client.patch(
        "/connectors/sink/offsets",
        json=offsets(({"task": 0, "source": 0}, {"orders": {"0": 20, "1": 30}})),
    )
    assert answer.status_code == 200
    assert herder.altered == [("sink", {0: {0: {"orders": {"0": 20, "1": 30}}}})]
