"""`POST /admin/leave-group` against a fake herder: 200 once handed over, 202 while not,
409 at once when nobody could take the work."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from protocol.messages import Allocation, ConnectorTaskId
from tests.unit.rest.fake_herder import WORKER_ID, FakeHerder

HANDED_OVER = "this worker runs nothing now and can be stopped"
HANDING_OVER = "leaving announced; its work is still being handed over"


@pytest.mark.parametrize(
    ("query", "timeout_s", "handed_over", "running", "status", "message"),
    [
        ("", 60.0, True, 0, 200, HANDED_OVER),
        ("?timeout_ms=1500", 1.5, False, 2, 202, HANDING_OVER),
    ],
)
def test_leaving_answers_200_once_handed_over_and_202_while_not(
    client: TestClient,
    herder: FakeHerder,
    query: str,
    timeout_s: float,
    handed_over: bool,
    running: int,
    status: int,
    message: str,
) -> None:
    herder.handed_over = handed_over
    herder.owned = Allocation.of(["gen"], [ConnectorTaskId("gen", i) for i in range(running)])
    answer = client.post(f"/admin/leave-group{query}")
    assert answer.status_code == status
    assert answer.json() == {
        "worker_id": WORKER_ID,
        "handed_over": handed_over,
        "running_tasks": running,
        "message": message,
    }
    assert herder.leave_timeouts == [timeout_s]


@pytest.mark.parametrize("timeout_ms", ["-1", "600001", "soon"])
def test_a_timeout_out_of_range_answers_400_and_nothing_leaves(
    client: TestClient, herder: FakeHerder, timeout_ms: str
) -> None:
    answer = client.post(f"/admin/leave-group?timeout_ms={timeout_ms}")
    assert answer.status_code == 400
    assert answer.json()["error_code"] == 400
    assert answer.json()["message"].startswith("Invalid request: query.timeout_ms")
    assert herder.leave_timeouts == []


def test_a_hand_off_nobody_can_take_answers_409_with_the_reason(
    client: TestClient, herder: FakeHerder
) -> None:
    herder.hand_off_refusal = "alone in the group: nobody to hand 2 tasks to"
    answer = client.post("/admin/leave-group")
    assert answer.status_code == 409
    assert answer.json() == {
        "error_code": 409,
        "message": "alone in the group: nobody to hand 2 tasks to",
    }
