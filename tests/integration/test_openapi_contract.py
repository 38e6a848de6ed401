"""Schemathesis against a running worker's `/openapi.json`: whatever a client sends that
the document allows (and plenty it does not), the worker answers without a 5xx and with
a body that matches the documented schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
)
from schemathesis.core.result import Ok
from schemathesis.schemas import APIOperation

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.processes import WorkerProcess, ready_worker

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

EXAMPLES_PER_OPERATION = 25
"""Bounded so `make test` stays quick; raise it locally to search harder. No shrinking
either: a failure is reported with the example that found it."""
DESTRUCTIVE = {"POST /admin/leave-group"}
"""Makes the worker leave the group for good and waits up to a minute for its hand-over;
tests/integration/test_scale_down.py covers it."""


@pytest.fixture(scope="module")
def contract_worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    root = tmp_path_factory.mktemp("contract-worker")
    with ready_worker("contract-worker", broker.bootstrap_servers, root) as process:
        yield process


def test_no_server_errors_and_documented_bodies(contract_worker: WorkerProcess) -> None:
    """One Hypothesis run per operation; every operation runs even when one fails, and
    the failure names it with the smallest example Hypothesis found."""
    schema = schemathesis.openapi.from_url(f"{contract_worker.url}/openapi.json")
    failures: dict[str, BaseException] = {}
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), f"/openapi.json is not valid OpenAPI: {result.err()}"
        operations.append(result.ok())
    assert len(operations) > 20, [op.label for op in operations]
    for operation in operations:
        if operation.label in DESTRUCTIVE:
            continue
        try:
            _fuzz(operation)
        except Exception as exc:
            failures[operation.label] = exc
    assert not failures, "\n\n".join(f"{label}: {exc}" for label, exc in failures.items())


def _fuzz(operation: APIOperation[Any, Any, Any, Any]) -> None:
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy())
    def run(case: schemathesis.Case[Any]) -> None:
        case.call_and_validate(
            checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
            timeout=30,
        )

    run()
