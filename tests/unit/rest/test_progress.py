"""`GET /workers/progress`: every task's newest progress and error totals, this worker's
own and each peer's as the peer reports it; a peer that does not answer is named with
why."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from protocol.messages import EMPTY_ALLOCATION, ConnectorTaskId
from rest.forwarding import FORWARDED_HEADER
from rest.progress import ProgressBody, TaskProgressBody, gathered
from tests.support.processes import free_port
from tests.unit.rest.conftest import FakeRuntime
from tests.unit.rest.fake_herder import WORKER_ID, FakeHerder
from worker.records.errors.task_errors import BatchErrors
from worker.runtime.task_progress import TaskProgress

SEEN = TaskProgress(
    batch_id=4,
    input_rows_total=50,
    input_rows_per_second=12.5,
    processed_rows_per_second=20.0,
    batch_duration_ms=100,
    source_lag=None,
)
COUNTED = BatchErrors(
    record_errors=10,
    record_failures=10,
    records_skipped=10,
    deadletterqueue_produce_requests=10,
    last_error_timestamp_ms=1_764_000_000_000,
)
OWN = {
    "connector": "gen",
    "task": 1,
    "worker_id": WORKER_ID,
    "batch_id": 4,
    "input_rows_per_second": 12.5,
    "processed_rows_per_second": 20.0,
    "errors": {
        "record_errors": 10,
        "record_failures": 10,
        "records_skipped": 10,
        "errors_logged": 0,
        "deadletterqueue_produce_requests": 10,
        "deadletterqueue_produce_failures": 0,
        "last_error_timestamp_ms": 1_764_000_000_000,
    },
}


def body(worker: str, connector: str, task: int) -> TaskProgressBody:
    return TaskProgressBody.model_validate(
        {**OWN, "worker_id": worker, "connector": connector, "task": task}
    )


def test_a_peer_speaks_for_its_own_tasks_only_and_a_silent_one_is_named() -> None:
    own = [body("a:1", "gen", 0)]
    answers: dict[str, ProgressBody | str] = {
        "b:1": ProgressBody(tasks=[body("b:1", "gen", 1), body("c:1", "gen", 2)]),
        "c:1": "no answer: ConnectTimeout",
    }

    merged = gathered(own, answers)

    assert [(t.worker_id, t.task) for t in merged.tasks] == [("a:1", 0), ("b:1", 1)]
    assert merged.unanswered == {"c:1": "no answer: ConnectTimeout"}


def test_asked_by_a_peer_a_worker_answers_with_its_own_tasks(
    client: TestClient, runtime: FakeRuntime
) -> None:
    runtime.seen = {ConnectorTaskId("gen", 1): SEEN}
    runtime.counted = {ConnectorTaskId("gen", 1): COUNTED}

    answer = client.get("/workers/progress", headers={FORWARDED_HEADER: "1"})

    assert answer.status_code == 200
    assert answer.json() == {"tasks": [OWN], "unanswered": {}}


def test_a_peer_that_does_not_answer_is_named_beside_the_own_tasks(
    client: TestClient, herder: FakeHerder, runtime: FakeRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime.seen = {ConnectorTaskId("gen", 1): SEEN}
    runtime.counted = {ConnectorTaskId("gen", 1): COUNTED}
    silent = f"127.0.0.1:{free_port()}"
    view = replace(
        herder.cluster_view(), workers={WORKER_ID: EMPTY_ALLOCATION, silent: EMPTY_ALLOCATION}
    )
    monkeypatch.setattr(herder, "cluster_view", lambda: view)

    answer = client.get("/workers/progress").json()

    assert answer["tasks"] == [OWN]
    assert list(answer["unanswered"]) == [silent]
    assert answer["unanswered"][silent].startswith("no answer: ConnectError")


def test_a_task_whose_errors_are_not_counted_yet_says_null_and_so_does_an_older_peer(
    client: TestClient, runtime: FakeRuntime
) -> None:
    """An older worker's answer has no `errors`: it still counts as its answer (its rates
    show), and the page shows its tasks' errors as unknown rather than as 0."""
    runtime.seen = {ConnectorTaskId("gen", 1): SEEN}

    answer = client.get("/workers/progress", headers={FORWARDED_HEADER: "1"}).json()

    assert answer["tasks"] == [{**OWN, "errors": None}]
    older = {key: value for key, value in OWN.items() if key != "errors"}
    parsed = ProgressBody.model_validate({"tasks": [older]})
    assert parsed.tasks[0].errors is None
    assert parsed.tasks[0].input_rows_per_second == 12.5


def test_the_progress_is_in_the_api_document(client: TestClient) -> None:
    assert "/workers/progress" in client.get("/openapi.json").json()["paths"]
