"""A thin Kafka Connect REST client for integration tests."""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx

from tests.support.polling import wait_until


class Api:
    """Fails with the answer's body when a status is not the expected one."""

    def __init__(self, url: str, timeout_s: float = 120.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        """How long `wait_states` waits."""

    def call(self, method: str, path: str, expect: int, **kwargs: Any) -> httpx.Response:
        answer = httpx.request(method, f"{self.url}{path}", timeout=60, **kwargs)
        assert answer.status_code == expect, f"{method} {path}: {answer.status_code} {answer.text}"
        return answer

    def status(self, name: str) -> dict[str, Any]:
        body: dict[str, Any] = self.call("GET", f"/connectors/{name}/status", 200).json()
        return body

    def wait_states(self, name: str, connector: str, tasks: list[str]) -> dict[str, Any]:
        def reached(status: dict[str, Any]) -> bool:
            states = [t["state"] for t in status["tasks"]]
            return (status["connector"]["state"], states) == (connector, tasks)

        return wait_until(
            partial(self.status, name),
            self.timeout_s,
            what=f"{name}: {connector} {tasks}",
            until=reached,
        )

    def once_tasks_stopped(self, method: str, path: str, **kwargs: Any) -> Any:
        """An offsets call (KIP-875) on a STOPPED connector, once no task reports RUNNING:
        STOPPED shows as soon as the herder knows it, the tasks stop in the rebalance that
        follows, and the call is a 409 until then."""

        def attempt() -> httpx.Response | None:
            answer = httpx.request(method, self.url + path, timeout=30, **kwargs)
            return None if answer.status_code == 409 else answer

        answer: httpx.Response = wait_until(
            attempt, self.timeout_s, what=f"{method} {path} without 409"
        )
        assert answer.status_code == 200, answer.text
        return answer.json()
