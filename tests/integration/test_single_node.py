"""The walking skeleton end to end: real broker, real worker processes, real Spark."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest

from sparkherd.broker.embedded import BrokerStartError, EmbeddedBroker, port_is_open
from sparkherd.broker.kafka_kraft import ListenerSecurity
from sparkherd.service import REST_KEEP_ALIVE_S
from tests.support.file_sink import committed_column, committed_files
from tests.support.jvm_options import spark_driver_options
from tests.support.kafka_topics import keyed, new_topic, produce
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port, ready_worker, running_broker

pytestmark = [pytest.mark.integration, pytest.mark.parallel, pytest.mark.long]


def generator(output: Path, tasks: int = 2, rate: int = 20) -> dict[str, str]:
    return {
        "connector.class": "generator",
        "tasks.max": str(tasks),
        "rows.per.second": str(rate),
        "output.path": str(output),
    }


def task_states(url: str, name: str) -> list[str]:
    body = httpx.get(f"{url}/connectors/{name}/status", timeout=5).json()
    return [task["state"] for task in body["tasks"]]


def all_running(url: str, name: str, count: int) -> bool:
    return task_states(url, name) == ["RUNNING"] * count


def parquet_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.parquet")) if directory.exists() else []


def read_seqs(directory: Path) -> list[int]:
    return committed_column(directory, "seq")


def assert_exactly_once(seqs: list[int]) -> None:
    assert seqs, "no rows written"
    assert seqs == list(range(len(seqs))), (
        f"gap or duplicate: {len(seqs)} rows, {len(set(seqs))} distinct, max {max(seqs)}"
    )


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    """Shared by the module's tests, which each leave it without connectors: a worker
    start is most of their time."""
    with ready_worker("worker-0", broker.bootstrap_servers, tmp_path_factory.mktemp("single")) as w:
        yield w


def test_rest_answers_like_kafka_connect(worker: WorkerProcess, tmp_path: Path) -> None:
    url = worker.url
    info = httpx.get(f"{url}/", timeout=5).json()
    assert set(info) == {"version", "commit", "kafka_cluster_id"}
    assert httpx.get(f"{url}/connectors", timeout=5).json() == []

    missing = httpx.get(f"{url}/connectors/nope", timeout=5)
    assert missing.status_code == 404
    assert missing.json() == {"error_code": 404, "message": "Connector nope not found"}

    unknown = httpx.post(
        f"{url}/connectors",
        json={"name": "x", "config": {"connector.class": "NoSuchConnector"}},
        timeout=10,
    )
    assert unknown.status_code == 400
    assert "NoSuchConnector" in unknown.json()["message"]

    no_output = httpx.post(
        f"{url}/connectors",
        json={"name": "x", "config": {"connector.class": "generator"}},
        timeout=10,
    )
    assert no_output.status_code == 400
    assert "output.path" in no_output.json()["message"]

    malformed = httpx.post(
        f"{url}/connectors",
        content=b"{not json",
        headers={"content-type": "application/json"},
        timeout=5,
    )
    assert malformed.status_code == 400
    assert malformed.json()["error_code"] == 400

    traversal = httpx.get(f"{url}/connectors/..%2Fetc", timeout=5)
    assert traversal.status_code in (400, 404)
    assert httpx.get(f"{url}/connectors", timeout=5).json() == []


def test_an_idle_connection_outlives_the_clients_keep_alive(worker: WorkerProcess) -> None:
    """A client keeps an idle connection 5 s (httpx) to 60 s (load balancers); a server
    that closed it first raced the client's next request on it (a CI run's POST got
    "Server disconnected without sending a response")."""
    with httpx.Client(timeout=5, limits=httpx.Limits(keepalive_expiry=REST_KEEP_ALIVE_S)) as client:
        first = client.get(f"{worker.url}/connectors")
        # Part of the scenario, not a wait: longer than uvicorn's default keep-alive.
        time.sleep(6)
        again = client.get(f"{worker.url}/connectors")
    assert (first.status_code, again.status_code) == (200, 200)
    assert first.extensions["network_stream"] is again.extensions["network_stream"]


def test_generator_runs_and_delete_stops_it(worker: WorkerProcess, tmp_path: Path) -> None:
    url, output = worker.url, tmp_path / "out"
    created = httpx.post(
        f"{url}/connectors", json={"name": "gen", "config": generator(output)}, timeout=30
    )
    assert created.status_code == 201, created.text
    assert created.headers["location"] == "/connectors/gen"
    assert created.json()["name"] == "gen"

    duplicate = httpx.post(
        f"{url}/connectors", json={"name": "gen", "config": generator(output)}, timeout=30
    )
    assert duplicate.status_code == 409

    wait_until(lambda: all_running(url, "gen", 2), 120, what="both tasks RUNNING")
    status = httpx.get(f"{url}/connectors/gen/status", timeout=5).json()
    assert status["connector"]["state"] == "RUNNING"
    assert status["type"] == "source"
    assert all(t["worker_id"] == status["connector"]["worker_id"] for t in status["tasks"])
    assert all(t["started_at"] for t in status["tasks"])
    for task_dir in (output / "task-0", output / "task-1"):
        wait_until(partial(parquet_files, task_dir), 60, what=f"{task_dir.name} files")

    log_before = len(worker.log_text())
    assert httpx.delete(f"{url}/connectors/gen", timeout=30).status_code == 204
    assert httpx.get(f"{url}/connectors/gen", timeout=5).status_code == 404
    worker.wait_tasks_stopped(["gen-0", "gen-1"], log_before, 60)
    settled = {task: len(parquet_files(output / f"task-{task}")) for task in (0, 1)}
    for task in (0, 1):
        assert_exactly_once(read_seqs(output / f"task-{task}"))
    assert {task: len(parquet_files(output / f"task-{task}")) for task in (0, 1)} == settled


def test_killed_worker_resumes_from_checkpoints(
    broker: EmbeddedBroker, tmp_path: Path, logs_dir: Path
) -> None:
    output = tmp_path / "out"
    group = [f"group.id=resume-{free_port()}"]
    first = WorkerProcess("first", broker.bootstrap_servers, tmp_path / "ck", logs_dir, group)
    second: WorkerProcess | None = None
    try:
        first.start().wait_ready()
        response = httpx.post(
            f"{first.url}/connectors", json={"name": "gen", "config": generator(output)}, timeout=30
        )
        assert response.status_code == 201, response.text
        wait_until(lambda: all_running(first.url, "gen", 2), 120, what="tasks RUNNING")
        wait_until(lambda: len(read_seqs(output / "task-0")) >= 40, 60, what="first rows")
        first.signal(signal.SIGKILL)
        first.process.wait()  # type: ignore[union-attr]
        before = {t: len(read_seqs(output / f"task-{t}")) for t in (0, 1)}

        second = WorkerProcess(
            "second",
            broker.bootstrap_servers,
            tmp_path / "ck",
            logs_dir,
            group,
            rest_port=first.rest_port,
        ).start()
        second.wait_ready()
        wait_until(
            lambda: all(len(read_seqs(output / f"task-{t}")) > before[t] + 40 for t in (0, 1)),
            120,
            what="the restarted worker to continue both tasks",
        )
        for task in (0, 1):
            assert_exactly_once(read_seqs(output / f"task-{task}"))
    finally:
        first.kill()
        if second is not None:
            second.kill()


def test_unreachable_broker_fails_with_one_clear_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKHERD_")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkherd.cli",
            "worker",
            "--set",
            f"bootstrap.servers=127.0.0.1:{free_port()}",
            "--set",
            f"rest.port={free_port()}",
            "--set",
            f"checkpoint.root={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("sparkherd: cannot reach Kafka"), result.stderr


def test_invalid_config_fails_with_one_clear_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sparkherd.cli", "worker", "--set", "rest.port=abc"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "rest.port" in result.stderr.strip().splitlines()[-1]


@contextlib.contextmanager
def sparkherd_up(data_dir: Path, log: Path, *flags: str) -> Iterator[tuple[str, str]]:
    """`sparkherd up` on free ports, ready; its REST URL and its broker's address. Killed
    on the way out. Its Spark driver gets the tests' JVM options, which change how fast
    it starts, not what it does."""
    rest_port, broker_port = free_port(), free_port()
    url = f"http://127.0.0.1:{rest_port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKHERD_")}
    command = [sys.executable, "-m", "sparkherd.cli", "up", "--rest-port", str(rest_port)]
    command += ["--broker-port", str(broker_port), "--data-dir", str(data_dir), *flags]
    command += ["--set", f"spark.driver.extraJavaOptions={spark_driver_options()}"]
    with open(log, "ab") as out:
        up = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        wait_until(
            lambda: httpx.get(f"{url}/health", timeout=2).status_code == 200,
            180,
            what="REST of `sparkherd up`",
        )
        yield url, f"127.0.0.1:{broker_port}"
        os.killpg(up.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        assert up.wait(60) == 0
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait()
    assert not port_is_open("127.0.0.1", broker_port), "`up` left its broker running"


def test_up_runs_broker_and_worker_in_one_command(tmp_path: Path, logs_dir: Path) -> None:
    """Also reads a topic of multi-record batches to its end: Tansu answers
    ListOffsets(latest) short of it, so `up` keeps Spark's JVM source off on Tansu."""
    with sparkherd_up(tmp_path / "data", logs_dir / "up.log") as (url, bootstrap):
        response = httpx.post(
            f"{url}/connectors",
            json={"name": "demo", "config": generator(tmp_path / "out", tasks=1)},
            timeout=30,
        )
        assert response.status_code == 201, response.text
        topic = new_topic(bootstrap, "batches", 1)
        for batch in range(3):
            produce(bootstrap, topic, keyed(range(batch * 50, batch * 50 + 50)))
        read = {
            "connector.class": "kafka-to-files",
            "kafka.bootstrap.servers": bootstrap,
            "topics": topic,
            "output.path": str(tmp_path / "read"),
            "output.format": "json",
        }
        response = httpx.put(f"{url}/connectors/read/config", json=read, timeout=30)
        assert response.status_code == 201, response.text
        wait_until(lambda: all_running(url, "demo", 1), 120, what="demo task RUNNING")
        wait_until(
            lambda: len(json_lines(tmp_path / "read" / "task-0")) == 150,
            120,
            what="every record of the topic",
        )
    assert (tmp_path / "data" / "checkpoints" / "demo" / "task-0" / "offsets").is_dir()


def json_lines(task_dir: Path) -> list[str]:
    return [line for path in committed_files(task_dir) for line in path.read_text().splitlines()]


def test_up_on_apache_kafka_keeps_connectors_across_a_restart(
    tmp_path: Path, logs_dir: Path
) -> None:
    """Tansu forgets everything when it stops; Apache Kafka keeps the config topic on
    disk, so the second `up` runs the connector the first one was given, where it was."""
    data, output = tmp_path / "data", tmp_path / "out"
    with sparkherd_up(data, logs_dir / "up.log", "--broker", "kafka") as (url, _):
        response = httpx.post(
            f"{url}/connectors",
            json={"name": "kept", "config": generator(output, tasks=1, rate=50)},
            timeout=30,
        )
        assert response.status_code == 201, response.text
        wait_until(lambda: all_running(url, "kept", 1), 120, what="task RUNNING")
        wait_until(lambda: len(read_seqs(output / "task-0")) > 0, 60, what="first rows")
    rows_before = len(read_seqs(output / "task-0"))
    assert (data / "kafka" / "kraft-log" / "meta.properties").is_file()
    with sparkherd_up(data, logs_dir / "up.log", "--broker", "kafka") as (url, _):
        assert httpx.get(f"{url}/connectors", timeout=5).json() == ["kept"]
        wait_until(lambda: all_running(url, "kept", 1), 120, what="task RUNNING again")
        wait_until(lambda: len(read_seqs(output / "task-0")) > rows_before, 60, what="more rows")
    assert_exactly_once(read_seqs(output / "task-0"))


def test_broker_command_runs_in_foreground_and_stops_on_sigterm() -> None:
    port = free_port()
    broker = subprocess.Popen(
        [sys.executable, "-m", "sparkherd.cli", "broker", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_until(lambda: port_is_open("127.0.0.1", port), 30, what="broker port")
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(30) == 0
        assert not port_is_open("127.0.0.1", port)
    finally:
        if broker.poll() is None:
            os.killpg(broker.pid, signal.SIGKILL)
            broker.wait()


@pytest.mark.parametrize("engine", ["tansu", "kafka"])
def test_a_killed_broker_command_leaves_no_broker_behind(engine: str, tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "sparkherd.cli", "broker", "--engine", engine]
    command += ["--port", str(port), "--data-dir", str(tmp_path / "kafka")]
    broker = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: port_is_open("127.0.0.1", port), 120, what="broker port")
        broker.send_signal(signal.SIGKILL)
        broker.wait(10)
        wait_until(lambda: not port_is_open("127.0.0.1", port), 20, what="the broker to stop")
    finally:
        if broker.poll() is None:
            os.killpg(broker.pid, signal.SIGKILL)
            broker.wait()


def test_a_kafka_broker_that_cannot_start_says_so_and_where_its_log_is(tmp_path: Path) -> None:
    """An SSL listener without a key store: Kafka exits at start-up."""
    with (
        pytest.raises(BrokerStartError, match=r"exited with code \d+ before listening; its log"),
        running_broker(tmp_path, "kafka", ListenerSecurity("SSL")),
    ):
        pass
