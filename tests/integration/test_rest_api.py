"""Kafka Connect's REST API, endpoint by endpoint and status code by status code, against
real worker processes (real broker, real Spark)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config, worker_pair
from tests.support.file_sink import committed_column
from tests.support.polling import wait_until
from tests.support.processes import (
    WARM_UP_ON,
    WorkerProcess,
    free_port,
    ready_worker,
    running_broker,
)
from tests.support.rest_client import Api

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

TIMEOUT_S = 120
SINK_COMPACT_INTERVAL = 10
"""Spark's file sink compacts its log every 10 batches
(`spark.sql.streaming.fileSink.log.compactInterval`): where a gap in it fails the query."""


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """With the warm-up on: without it the offsets test's first batches run cold (slow
    enough under load that the stop interrupts the batch in flight), and PATCH then leaves
    the sink's log a batch short: the task fails at the log's next compaction with
    BATCH_METADATA_NOT_FOUND. That is the product's to fix; until then this worker runs as
    deployed."""
    root = tmp_path_factory.mktemp("rest-worker")
    with ready_worker(
        "rest-worker", broker.bootstrap_servers, root, [WARM_UP_ON], timeout_s=TIMEOUT_S
    ) as process:
        yield process


def lists_connector(process: WorkerProcess, name: str) -> bool:
    return name in httpx.get(f"{process.url}/connectors", timeout=5).json()


def has_logger_level(process: WorkerProcess, name: str, level: str) -> bool:
    answer = httpx.get(f"{process.url}/admin/loggers/{name}", timeout=5)
    return answer.status_code == 200 and answer.json()["level"] == level


def stopped_connector(name: str, root: Path) -> dict[str, Any]:
    """A body that creates a connector without starting Spark."""
    return {
        "name": name,
        "config": generator_config(root / "out", 1),
        "initial_state": "STOPPED",
    }


def started(status: dict[str, Any]) -> dict[int, str]:
    return {task["id"]: task["started_at"] for task in status["tasks"]}


def test_the_warm_up_read_kafka_and_wrote_each_table_format(worker: WorkerProcess) -> None:
    """What a first sink task would otherwise load and compile on its first batch
    (tests/bench/first_commit.py): Spark's Kafka connector, Delta's and Iceberg's writes."""
    parts = [line for line in worker.log_text().splitlines() if "warm-up: " in line]
    assert not [line for line in parts if " skipped: " in line], parts
    for done in (
        "records through Spark's Kafka connector",
        "KafkaToDeltaConnector.warm_up in",
        "KafkaToIcebergConnector.warm_up in",
    ):
        assert any(done in line for line in parts), f"no {done!r} among {parts}"


def test_connector_lifecycle(worker: WorkerProcess, tmp_path: Path) -> None:
    api, output = Api(worker.url), tmp_path / "out"
    config = generator_config(output, 2)
    created = api.call("POST", "/connectors", 201, json={"name": "life", "config": config})
    assert created.headers["location"] == "/connectors/life"
    api.call("POST", "/connectors", 409, json={"name": "life", "config": config})
    running = api.wait_states("life", "RUNNING", ["RUNNING", "RUNNING"])

    expanded = api.call("GET", "/connectors?expand=status&expand=info", 200).json()
    assert expanded["life"]["info"]["config"]["output.path"] == str(output)
    assert expanded["life"]["status"]["name"] == "life"
    assert set(api.call("GET", "/connectors?expand=status", 200).json()["life"]) <= {
        "status",
        "info",
    }
    tasks = api.call("GET", "/connectors/life/tasks", 200).json()
    assert [t["id"] for t in tasks] == [{"connector": "life", "task": i} for i in (0, 1)]
    assert all(t["config"] for t in tasks)
    task_status = api.call("GET", "/connectors/life/tasks/1/status", 200).json()
    assert (task_status["id"], task_status["state"]) == (1, "RUNNING")
    api.call("GET", "/connectors/life/tasks/7/status", 404)

    # One task restarts alone, from its checkpoint.
    api.call("POST", "/connectors/life/tasks/0/restart", 204)
    after = wait_until(
        partial(api.status, "life"),
        TIMEOUT_S,
        what="task 0 restarted",
        until=lambda status: started(status)[0] != started(running)[0],
    )
    assert started(after)[1] == started(running)[1], "restarting task 0 restarted task 1"
    api.call("POST", "/connectors/life/tasks/9/restart", 404)

    # Pause keeps the assignment and stops the queries; resume starts them again.
    api.call("PUT", "/connectors/life/pause", 202)
    api.wait_states("life", "PAUSED", ["PAUSED", "PAUSED"])
    api.call("PUT", "/connectors/life/resume", 202)
    resumed = api.wait_states("life", "RUNNING", ["RUNNING", "RUNNING"])

    # KIP-745 restarts: 204 for the connector alone, 202 and a plan otherwise.
    api.call("POST", "/connectors/life/restart", 204)
    plan = api.call("POST", "/connectors/life/restart?includeTasks=true&onlyFailed=true", 202)
    assert [t["state"] for t in plan.json()["tasks"]] == ["RUNNING", "RUNNING"], "none failed"
    plan = api.call("POST", "/connectors/life/restart?includeTasks=true", 202).json()
    assert plan["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in plan["tasks"]] == ["RESTARTING", "RESTARTING"]
    wait_until(
        partial(api.status, "life"),
        TIMEOUT_S,
        what="both tasks restarted",
        until=lambda status: all(
            t["state"] == "RUNNING" and t["started_at"] != started(resumed)[t["id"]]
            for t in status["tasks"]
        ),
    )

    # Stop: the connector keeps its config but has no tasks; resume brings them back.
    api.call("PUT", "/connectors/life/stop", 204)
    api.wait_states("life", "STOPPED", [])
    assert api.call("GET", "/connectors/life/tasks", 200).json() == []
    assert api.call("GET", "/connectors/life", 200).json()["tasks"] == []
    api.call("PUT", "/connectors/life/resume", 202)
    api.wait_states("life", "RUNNING", ["RUNNING", "RUNNING"])

    api.call("DELETE", "/connectors/life", 204)
    for task in (0, 1):
        seqs = committed_column(output / f"task-{task}", "seq")
        assert seqs and seqs == list(range(len(seqs))), f"task {task}: gap or duplicate"


def test_a_failed_task_runs_again_once_restarted(worker: WorkerProcess, tmp_path: Path) -> None:
    api, blocked = Api(worker.url), tmp_path / "out"
    blocked.write_text("a file where the task's output directory should be")
    config = generator_config(blocked, 1)
    api.call("POST", "/connectors", 201, json={"name": "phoenix", "config": config})
    failed = api.wait_states("phoenix", "RUNNING", ["FAILED"])
    assert "ParentNotDirectoryException" in failed["tasks"][0]["trace"]

    blocked.unlink()
    plan = api.call("POST", "/connectors/phoenix/restart?includeTasks=true&onlyFailed=true", 202)
    assert [t["state"] for t in plan.json()["tasks"]] == ["RESTARTING"]
    api.wait_states("phoenix", "RUNNING", ["RUNNING"])
    wait_until(
        partial(committed_column, blocked / "task-0", "seq"), TIMEOUT_S, what="a first batch"
    )

    blocked_again = tmp_path / "elsewhere"
    blocked_again.write_text("occupied")
    # Another output.path than the checkpoint's is refused while it would run; reset first.
    api.call("PUT", "/connectors/phoenix/stop", 204)
    api.wait_states("phoenix", "STOPPED", [])
    api.once_tasks_stopped("DELETE", "/connectors/phoenix/offsets")
    api.call("PUT", "/connectors/phoenix/config", 200, json=generator_config(blocked_again, 1))
    api.call("PUT", "/connectors/phoenix/resume", 202)
    refailed = api.wait_states("phoenix", "RUNNING", ["FAILED"])
    assert str(blocked_again) in refailed["tasks"][0]["trace"], "not restarted with its new config"
    blocked_again.unlink()
    api.call("POST", "/connectors/phoenix/tasks/0/restart", 204)
    api.wait_states("phoenix", "RUNNING", ["RUNNING"])
    api.call("DELETE", "/connectors/phoenix", 204)


def test_offsets_show_alter_and_reset_a_tasks_checkpoint(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    api, output = Api(worker.url), tmp_path / "out"
    config = generator_config(output, 1, interval_ms=500)
    api.call("POST", "/connectors", 201, json={"name": "progress", "config": config})
    task_output = output / "task-0"
    wait_until(partial(committed_column, task_output, "seq"), TIMEOUT_S, what="a first batch")
    assert api.call("GET", "/connectors/progress/offsets", 200).json()["offsets"]

    partition = {"task": 0, "source": 0}
    moved = {"offsets": [{"partition": partition, "offset": {"offset": 1000, "timestamp": 0}}]}
    refused = api.call("PATCH", "/connectors/progress/offsets", 400, json=moved).json()
    assert "STOPPED" in refused["message"]

    api.call("PUT", "/connectors/progress/stop", 204)
    api.wait_states("progress", "STOPPED", [])

    def stopped_where_its_rows_end() -> tuple[dict[str, Any], int] | None:
        """STOPPED and no tasks show as soon as the herder knows it; the task itself
        stops in the rebalance that follows and may commit one more batch first."""
        [shown] = api.call("GET", "/connectors/progress/offsets", 200).json()["offsets"]
        written = len(committed_column(task_output, "seq"))
        return (shown, written) if shown["offset"]["offset"] == written else None

    shown, written = wait_until(
        stopped_where_its_rows_end, TIMEOUT_S, what="offsets at the end of the rows written"
    )
    assert shown["partition"] == partition

    moved["offsets"][0]["offset"]["timestamp"] = shown["offset"]["timestamp"]
    answer = api.once_tasks_stopped("PATCH", "/connectors/progress/offsets", json=moved)
    assert answer == {"message": "The offsets for this connector have been altered successfully"}
    [shown] = api.call("GET", "/connectors/progress/offsets", 200).json()["offsets"]
    assert shown["offset"]["offset"] == 1000
    bad = {"offsets": [{"partition": {"task": "zero"}, "offset": {}}]}
    api.call("PATCH", "/connectors/progress/offsets", 400, json=bad)

    api.call("PUT", "/connectors/progress/resume", 202)
    altered_at = newest_sink_batch(task_output)
    wait_until(
        lambda: newest_sink_batch(task_output),
        TIMEOUT_S,
        what="the sink's log past its next compaction after the altered batch",
        until=lambda newest: newest > altered_at + SINK_COMPACT_INTERVAL,
    )
    api.wait_states("progress", "RUNNING", ["RUNNING"])
    seqs = [s for s in committed_column(task_output, "seq") if s >= 1000]
    assert seqs == list(range(1000, 1000 + len(seqs)))
    assert committed_column(task_output, "seq")[:written] == list(range(written))

    api.call("PUT", "/connectors/progress/stop", 204)
    api.wait_states("progress", "STOPPED", [])
    answer = api.once_tasks_stopped("DELETE", "/connectors/progress/offsets")
    assert answer == {"message": "The offsets for this connector have been reset successfully"}
    assert api.call("GET", "/connectors/progress/offsets", 200).json() == {"offsets": []}
    api.call("DELETE", "/connectors/progress", 204)


def newest_sink_batch(task_output: Path) -> int:
    log = task_output / "_spark_metadata"
    names = [p.name.removesuffix(".compact") for p in log.iterdir()]
    return max((int(name) for name in names if name.isdigit()), default=-1)


def test_config_put_patch_and_initial_state(worker: WorkerProcess, tmp_path: Path) -> None:
    api = Api(worker.url)
    config = generator_config(tmp_path / "out", 1)
    created = api.call("PUT", "/connectors/cfg/config", 201, json=config)
    assert created.headers["location"] == "/connectors/cfg"
    assert created.json()["name"] == "cfg"
    updated = api.call("PUT", "/connectors/cfg/config", 200, json={**config, "tasks.max": 2})
    assert updated.json()["config"]["tasks.max"] == "2"
    api.call("PUT", "/connectors/cfg/config", 400, json={**config, "name": "other"})
    api.call("PUT", "/connectors/cfg/config", 400, json={**config, "rows.per.second": "fast"})

    patched = api.call(
        "PATCH", "/connectors/cfg/config", 200, json={"rows.per.second": 3, "output.format": None}
    ).json()
    assert patched["config"]["rows.per.second"] == "3"
    assert "output.format" not in patched["config"]
    api.call("PATCH", "/connectors/missing/config", 404, json={"tasks.max": "1"})
    assert api.call("GET", "/connectors/cfg/config", 200).json() == patched["config"]

    stopped = {
        "name": "born-stopped",
        "config": generator_config(tmp_path / "stopped", 1),
        "initial_state": "STOPPED",
    }
    api.call("POST", "/connectors", 201, json=stopped)
    api.wait_states("born-stopped", "STOPPED", [])
    paused_config = generator_config(tmp_path / "paused", 1)
    paused = {"name": "born-paused", "config": paused_config, "initial_state": "PAUSED"}
    api.call("POST", "/connectors", 201, json=paused)
    api.wait_states("born-paused", "PAUSED", ["PAUSED"])
    bad = {"name": "x", "config": config, "initial_state": "SLEEPING"}
    assert "initial_state" in api.call("POST", "/connectors", 400, json=bad).json()["message"]
    for name in ("cfg", "born-stopped", "born-paused"):
        api.call("DELETE", f"/connectors/{name}", 204)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/connectors/ghost"),
        ("GET", "/connectors/ghost/config"),
        ("GET", "/connectors/ghost/status"),
        ("GET", "/connectors/ghost/offsets"),
        ("DELETE", "/connectors/ghost/offsets"),
        ("GET", "/connectors/ghost/tasks"),
        ("GET", "/connectors/ghost/tasks/0/status"),
        ("POST", "/connectors/ghost/tasks/0/restart"),
        ("POST", "/connectors/ghost/restart"),
        ("PUT", "/connectors/ghost/pause"),
        ("PUT", "/connectors/ghost/resume"),
        ("PUT", "/connectors/ghost/stop"),
        ("DELETE", "/connectors/ghost"),
    ],
)
def test_unknown_connector_is_404_everywhere(worker: WorkerProcess, method: str, path: str) -> None:
    body = Api(worker.url).call(method, path, 404).json()
    assert body == {"error_code": 404, "message": body["message"]}
    assert "ghost" in body["message"]


def test_a_huge_body_is_refused_and_nothing_is_stored(worker: WorkerProcess) -> None:
    config = {"connector.class": "generator", "output.path": "/tmp/x", "padding": "x" * 2_000_000}
    answer = Api(worker.url).call(
        "POST", "/connectors", 413, json={"name": "huge", "config": config}
    )
    assert answer.json()["error_code"] == 413
    assert "huge" not in Api(worker.url).call("GET", "/connectors", 200).json()


def test_connector_plugins_list_describe_and_validate(worker: WorkerProcess) -> None:
    api = Api(worker.url)
    plugins = api.call("GET", "/connector-plugins?connectorsOnly=true", 200).json()
    generator = next(p for p in plugins if p["class"].endswith("GeneratorConnector"))
    assert generator["type"] == "source"
    keys = [
        entry["name"]
        for entry in api.call("GET", "/connector-plugins/generator/config", 200).json()
    ]
    assert {"connector.class", "tasks.max", "rows.per.second"} <= set(keys)

    valid = {"connector.class": "generator", "tasks.max": "2", "output.path": "/tmp/x"}
    result = api.call("PUT", "/connector-plugins/generator/config/validate", 200, json=valid)
    assert result.json()["error_count"] == 0

    invalid = {**valid, "tasks.max": "zero"}
    result = api.call("PUT", "/connector-plugins/generator/config/validate", 200, json=invalid)
    body = result.json()
    assert body["error_count"] == 1
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]}
    assert errors["tasks.max"], body

    api.call("GET", "/connector-plugins/NoSuchConnector/config", 404)
    api.call("PUT", "/connector-plugins/NoSuchConnector/config/validate", 404, json=valid)


def test_loggers_on_one_worker(worker: WorkerProcess) -> None:
    api = Api(worker.url)
    assert "root" in api.call("GET", "/admin/loggers", 200).json()
    changed = api.call("PUT", "/admin/loggers/herder", 200, json={"level": "DEBUG"}).json()
    assert "herder" in changed and "herder.herder" in changed
    level = api.call("GET", "/admin/loggers/herder.herder", 200).json()
    assert level["level"] == "DEBUG" and level["last_modified"] is not None
    api.call("PUT", "/admin/loggers/herder", 200, json={"level": "INFO"})
    api.call("PUT", "/admin/loggers/herder", 400, json={"level": "LOUD"})
    api.call("GET", "/admin/loggers/no.such.logger", 404)


def test_health_is_503_until_joined_and_an_early_create_waits_for_the_join(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """A user who starts a worker and POSTs at once gets 201, as from Kafka Connect, whose
    herder queues requests until it has joined; not a 409 for an unknown leader. With the
    warm-up on, as deployed: it holds the join back long enough to see the 503."""
    process = WorkerProcess(
        "health",
        broker.bootstrap_servers,
        tmp_path / "checkpoints",
        tmp_path,
        [f"group.id=health-{free_port()}", WARM_UP_ON],
    ).start()
    try:
        first = wait_until(
            lambda: httpx.get(f"{process.url}/health", timeout=2),
            TIMEOUT_S,
            what="the REST server to answer /health",
            interval_s=0.05,
        )
        assert first.status_code == 503, first.text
        assert first.json()["status"] == "starting"
        early = {"name": "early", "config": generator_config(tmp_path / "early", 1)}
        created = httpx.post(f"{process.url}/connectors", json=early, timeout=TIMEOUT_S)
        assert created.status_code == 201, created.text
        assert created.json()["name"] == "early"
        process.wait_ready(TIMEOUT_S)
        assert httpx.get(f"{process.url}/health", timeout=2).json()["status"] == "healthy"
    finally:
        process.kill()


def test_health_is_500_once_the_broker_is_gone(tmp_path: Path) -> None:
    """What a readiness probe sees when a worker loses its group: it stops routing to it."""
    with running_broker(tmp_path) as own_broker:
        process = WorkerProcess("lonely", own_broker.bootstrap_servers, tmp_path, tmp_path)
        process.start()
        try:
            process.wait_ready(TIMEOUT_S)
            own_broker.stop()
            health = f"{process.url}/health"
            wait_until(
                lambda: httpx.get(health, timeout=2).status_code == 500,
                TIMEOUT_S,
                what="/health to answer 500",
            )
            unhealthy = httpx.get(health, timeout=2).json()
            assert unhealthy["status"] == "unhealthy"
            assert "coordinator" in unhealthy["message"]
        finally:
            process.kill()


def test_follower_forwards_writes_and_cluster_log_levels_reach_every_worker(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    with worker_pair(broker, tmp_path, [f"group.id=forward-{free_port()}"]) as pair:
        first, second, _, follower = pair
        body = stopped_connector("via-follower", tmp_path)
        created = Api(follower.url).call("POST", "/connectors", 201, json=body)
        assert created.headers["location"] == "/connectors/via-follower"
        Api(follower.url).call("PUT", "/connectors/via-follower/pause", 202)
        for process in (first, second):
            wait_until(
                partial(lists_connector, process, "via-follower"),
                TIMEOUT_S,
                what=f"{process.name} to list via-follower",
            )

        Api(follower.url).call(
            "PUT", "/admin/loggers/worker.spark?scope=cluster", 204, json={"level": "trace"}
        )
        for process in (first, second):
            wait_until(
                partial(has_logger_level, process, "worker.spark", "TRACE"),
                TIMEOUT_S,
                what=f"{process.name} to apply the cluster-wide level",
            )


def test_basic_auth_guards_every_worker_and_survives_forwarding(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    users = tmp_path / "users"
    users.write_text("admin:s3cret\n", encoding="utf-8")
    settings = [
        f"group.id=auth-{free_port()}",
        "rest.auth=basic",
        f"rest.auth.credentials.file={users}",
    ]
    admin = httpx.BasicAuth("admin", "s3cret")
    with worker_pair(broker, tmp_path, settings, admin) as (_, _, leader, follower):
        body = stopped_connector("guarded", tmp_path)
        refused = httpx.post(f"{follower.url}/connectors", json=body, timeout=30)
        assert refused.status_code == 401, refused.text
        assert refused.headers["www-authenticate"].startswith("Basic")
        wrong = httpx.BasicAuth("admin", "guess")
        assert httpx.get(f"{leader}/connectors", auth=wrong, timeout=5).status_code == 401

        created = httpx.post(f"{follower.url}/connectors", json=body, auth=admin, timeout=30)
        assert created.status_code == 201, created.text
        assert httpx.get(f"{leader}/connectors", auth=admin, timeout=5).json() == ["guarded"]
        assert httpx.get(f"{follower.url}/health", timeout=5).status_code == 200


def test_https_listeners_with_bearer_tokens_forward_over_tls(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    settings = [
        f"group.id=tls-{free_port()}",
        f"listeners.https.ssl.certfile={cert}",
        f"listeners.https.ssl.keyfile={key}",
        f"listeners.https.ssl.cafile={cert}",
        "rest.auth=bearer",
        "rest.auth.credentials=t0ken",
    ]
    token = {"Authorization": "Bearer t0ken"}

    def bearer(request: httpx.Request) -> httpx.Request:
        request.headers.update(token)
        return request

    with worker_pair(broker, tmp_path, settings, bearer, cert) as (first, _, leader, follower):
        assert leader.startswith("https://")
        trusted = httpx.Client(verify=first.verify, headers=token, timeout=30)
        created = trusted.post(
            f"{follower.url}/connectors", json=stopped_connector("over-tls", tmp_path)
        )
        assert created.status_code == 201, created.text
        assert trusted.get(f"{leader}/connectors").json() == ["over-tls"]
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{follower.url}/connectors", headers=token, timeout=5)
        plain = f"http://127.0.0.1:{follower.rest_port}/health"
        with pytest.raises(httpx.HTTPError):
            httpx.get(plain, timeout=5)
