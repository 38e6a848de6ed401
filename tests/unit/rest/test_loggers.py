"""`/admin/loggers`: Connect's log-level API over Python's logging, with a fake clock."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from rest.loggers import LoggerLevels, UnknownLogLevel, log4j_name, loggers_router

NOW_S = 1_700_000_000.5
NOW_MS = 1_700_000_000_500


@dataclass
class RecordingCluster:
    calls: list[tuple[str, str]] = field(default_factory=list)

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        self.calls.append((namespace, level))


def existing_loggers() -> dict[str, logging.Logger]:
    return {
        name: logger
        for name, logger in list(logging.Logger.manager.loggerDict.items())
        if isinstance(logger, logging.Logger)
    }


@pytest.fixture
def namespace() -> Iterator[str]:
    """A logger namespace of this test's own; every level changed meanwhile is put back."""
    saved = {name: logger.level for name, logger in existing_loggers().items()}
    root_level = logging.root.level
    yield f"loggers-test-{uuid.uuid4().hex}"
    for name, logger in existing_loggers().items():
        logger.setLevel(saved.get(name, logging.NOTSET))
    logging.root.setLevel(root_level)


@pytest.fixture
def cluster() -> RecordingCluster:
    return RecordingCluster()


@pytest.fixture
def client(cluster: RecordingCluster) -> TestClient:
    app = FastAPI()
    app.include_router(loggers_router(LoggerLevels(clock=lambda: NOW_S), cluster))
    return TestClient(app)


def test_the_listing_shows_root_and_loggers_with_a_level_of_their_own(
    client: TestClient, namespace: str
) -> None:
    logging.getLogger(f"{namespace}.explicit").setLevel(logging.ERROR)
    logging.getLogger(f"{namespace}.inherited")

    response = client.get("/admin/loggers")

    assert response.status_code == 200
    body = response.json()
    assert list(body) == sorted(body)
    assert body["root"] == {
        "level": log4j_name(logging.root.getEffectiveLevel()),
        "last_modified": None,
    }
    assert body[f"{namespace}.explicit"] == {"level": "ERROR", "last_modified": None}
    assert f"{namespace}.inherited" not in body


def test_a_logger_reports_the_level_it_inherits(client: TestClient, namespace: str) -> None:
    logging.getLogger(namespace).setLevel(logging.WARNING)
    logging.getLogger(f"{namespace}.child")

    response = client.get(f"/admin/loggers/{namespace}.child")

    assert response.status_code == 200
    assert response.json() == {"level": "WARN", "last_modified": None}


def test_the_root_logger_is_found_by_name_in_any_case(client: TestClient) -> None:
    response = client.get("/admin/loggers/ROOT")

    assert response.status_code == 200
    assert response.json()["level"] == log4j_name(logging.root.getEffectiveLevel())


def test_a_name_no_code_has_asked_a_logger_for_is_not_found(
    client: TestClient, namespace: str
) -> None:
    logging.getLogger(f"{namespace}.child")

    for name in (namespace, f"{namespace}.other"):
        response = client.get(f"/admin/loggers/{name}")
        assert response.status_code == 404
        assert response.json() == {"error_code": 404, "message": f"Logger {name} not found."}


def test_a_level_applies_to_the_namespace_and_answers_what_changed(
    client: TestClient, namespace: str
) -> None:
    logging.getLogger(namespace).setLevel(logging.INFO)
    children = [f"{namespace}.a", f"{namespace}.a.b"]
    for name in children:
        logging.getLogger(name)
    sibling = logging.getLogger(f"{namespace}-sibling")

    response = client.put(f"/admin/loggers/{namespace}", json={"level": "DEBUG"})

    assert response.status_code == 200
    assert response.json() == [namespace, *children]
    assert all(logging.getLogger(name).level == logging.DEBUG for name in children)
    assert sibling.level == logging.NOTSET
    assert client.get(f"/admin/loggers/{namespace}.a.b").json() == {
        "level": "DEBUG",
        "last_modified": NOW_MS,
    }


def test_setting_a_level_creates_the_namespace_logger(client: TestClient, namespace: str) -> None:
    response = client.put(f"/admin/loggers/{namespace}", json={"level": "OFF"})

    assert response.json() == [namespace]
    assert client.get("/admin/loggers").json()[namespace] == {
        "level": "OFF",
        "last_modified": NOW_MS,
    }


def test_a_logger_already_at_the_level_is_not_reported_nor_touched_in_time(
    namespace: str,
) -> None:
    now = [NOW_S]
    levels = LoggerLevels(clock=lambda: now[0])
    levels.set_level(namespace, "ERROR")
    now[0] += 60

    assert levels.set_level(namespace, "error") == []
    assert levels.all_levels()[namespace].last_modified == NOW_MS


@pytest.mark.parametrize(
    ("requested", "python_level", "reported"),
    [
        ("trace", 5, "TRACE"),
        ("Debug", logging.DEBUG, "DEBUG"),
        ("WARN", logging.WARNING, "WARN"),
        ("fatal", logging.CRITICAL, "FATAL"),
        ("OFF", logging.CRITICAL + 1, "OFF"),
    ],
)
def test_log4j_level_names_map_onto_python_levels_and_back(
    client: TestClient, namespace: str, requested: str, python_level: int, reported: str
) -> None:
    client.put(f"/admin/loggers/{namespace}", json={"level": requested})

    assert logging.getLogger(namespace).level == python_level
    assert client.get(f"/admin/loggers/{namespace}").json()["level"] == reported


@pytest.mark.parametrize(
    ("python_level", "reported"), [(0, "TRACE"), (15, "INFO"), (25, "WARN"), (99, "OFF")]
)
def test_python_levels_between_log4j_ones_read_as_the_next_log4j_level(
    python_level: int, reported: str
) -> None:
    assert log4j_name(python_level) == reported


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"level": "LOUD"}, "Invalid log level 'LOUD'"),
        ({}, "Desired 'level' parameter was not specified in request."),
        ({"level": None}, "Desired 'level' parameter was not specified in request."),
    ],
)
def test_a_missing_or_unknown_level_is_a_bad_request(
    client: TestClient, namespace: str, body: dict[str, str | None], message: str
) -> None:
    response = client.put(f"/admin/loggers/{namespace}", json=body)

    assert response.status_code == 400
    assert response.json()["message"].startswith(message)
    assert namespace not in logging.Logger.manager.loggerDict


def test_an_unknown_level_name_is_refused_without_a_request_too(namespace: str) -> None:
    with pytest.raises(UnknownLogLevel, match="LOUD"):
        LoggerLevels().set_level(namespace, "LOUD")


def test_cluster_scope_hands_the_canonical_level_to_the_cluster(
    client: TestClient, cluster: RecordingCluster, namespace: str
) -> None:
    response = client.put(f"/admin/loggers/{namespace}?scope=Cluster", json={"level": "debug"})

    assert response.status_code == 204
    assert response.content == b""
    assert cluster.calls == [(namespace, "DEBUG")]
    assert namespace not in logging.Logger.manager.loggerDict


def test_an_unknown_scope_falls_back_to_this_worker_with_a_warning(
    client: TestClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="rest.loggers"):
        response = client.put(f"/admin/loggers/{namespace}?scope=galaxy", json={"level": "ERROR"})

    assert response.json() == [namespace]
    assert "galaxy" in caplog.text


def test_the_root_namespace_covers_every_logger(client: TestClient, namespace: str) -> None:
    logging.getLogger(namespace).setLevel(logging.INFO)

    response = client.put("/admin/loggers/root", json={"level": "FATAL"})

    assert {"root", namespace} <= set(response.json())
    assert logging.root.level == logging.CRITICAL
    assert logging.getLogger(namespace).level == logging.CRITICAL
