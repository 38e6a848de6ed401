"""Hostile REST input against one real worker (real broker, real Spark), probe by probe.

Every probe here once worked against sparkherd: it ran code, read files, broke paths or
log lines, raced a check, or answered 5xx. The worker runs with basic authentication and
config providers, as a production worker would; after every probe it must still answer.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from rest.loggers import MAX_CREATED_LOGGERS
from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.cluster import generator_config
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, process_tree, ready_worker

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

AUTH = ("probe", "s3cret-pass")
SECRET = "s3cr3t-value-never-shown"
RUN_ID = "shell-ran"


class Probe:
    """The worker under attack, its files, and an authenticated client."""

    def __init__(self, worker: WorkerProcess, root: Path, secrets: Path) -> None:
        self.worker = worker
        self.root = root
        self.secrets = secrets

    def call(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        url = httpx.URL(f"{self.worker.url}{path}")
        return httpx.request(method, url, auth=AUTH, timeout=60, **kwargs)  # type: ignore[arg-type]

    def create(self, name: str, config: dict[str, str], state: str = "STOPPED") -> httpx.Response:
        body = {"name": name, "config": config, "initial_state": state}
        return self.call("POST", "/connectors", json=body)

    def alive(self) -> None:
        answer = self.call("GET", "/")
        assert answer.status_code == 200, answer.text


@pytest.fixture(scope="module")
def probe(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    root = tmp_path_factory.mktemp("probe")
    secrets = root / "secrets"
    secrets.mkdir()
    (secrets / "paths.properties").write_text(f"out={root / 'provided-output'}\n")
    (secrets / "rate").write_text(SECRET)
    settings = [
        "rest.auth=basic",
        f"rest.auth.credentials={AUTH[0]}:{AUTH[1]}",
        "config.providers=file,env,dir",
        "config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider",
        f"config.providers.file.param.allowed.paths={secrets}",
        "config.providers.env.class=env",
        "config.providers.env.param.allowlist.pattern=PROBE_.*",
        "config.providers.dir.class=directory",
        f"config.providers.dir.param.allowed.paths={secrets}",
    ]
    environment = {"PROBE_RATE": "7", "OTHER_SECRET": SECRET}
    with ready_worker(
        "probe", broker.bootstrap_servers, root, settings, environment=environment
    ) as worker:
        yield Probe(worker, root, secrets)
        worker_log = worker.log_text()
    assert "Beautiful is better than ugly" not in worker_log
    assert SECRET not in worker_log


def error_of(answer: httpx.Response, status: int) -> str:
    assert answer.status_code == status, f"{answer.status_code} {answer.text}"
    body = answer.json()
    assert body["error_code"] == status
    message: str = body["message"]
    return message


@pytest.mark.parametrize(
    "connector_class", ["this.Zen", "unittest.__main__.X", "..x", "os.system", "pathlib.Path"]
)
def test_connector_class_never_imports_what_a_request_names(
    probe: Probe, connector_class: str, tmp_path: Path
) -> None:
    config = {**generator_config(tmp_path, 1), "connector.class": connector_class}
    message = error_of(probe.create("imports", config), 400)
    assert "no installed plugin" in message
    validate = probe.call("PUT", f"/connector-plugins/{connector_class}/config/validate", json={})
    assert validate.status_code == 404
    probe.alive()


@pytest.mark.parametrize(
    "raw_name",
    ["a%0Ab", "a%09b", "..%5C..%5Cdecoy", "a%E2%80%A8b", "a%00b", "%C3%A9" * 128, "%20lead"],
)
def test_path_names_get_the_same_check_as_body_names(
    probe: Probe, raw_name: str, tmp_path: Path
) -> None:
    answer = probe.call("PUT", f"/connectors/{raw_name}/config", json=generator_config(tmp_path, 1))
    assert "connector name" in error_of(answer, 400)
    assert "connector name" in error_of(probe.call("GET", f"/connectors/{raw_name}/status"), 400)
    assert all(name.isprintable() for name in probe.call("GET", "/connectors").json())
    body = probe.create("a\nb", generator_config(tmp_path, 1))
    assert "connector name" in error_of(body, 400)


def test_a_unicode_name_works_end_to_end(probe: Probe, tmp_path: Path) -> None:
    name = "ünïcødé-名前"
    created = probe.create(name, generator_config(tmp_path / "1", 1))
    assert created.status_code == 201, created.text
    assert created.headers["Location"] == f"/connectors/{quote(name, safe='')}"
    path = f"/connectors/{quote(name, safe='')}"
    assert probe.call("GET", path).json()["name"] == name
    assert probe.call("GET", f"{path}/status").status_code == 200
    assert probe.call("GET", f"{path}/offsets").json() == {"offsets": []}
    put = probe.call(
        "PUT",
        f"/connectors/{quote(name + '2', safe='')}/config",
        json=generator_config(tmp_path / "2", 1),
    )
    assert (
        put.status_code == 201
        and put.headers["Location"] == f"/connectors/{quote(name + '2', safe='')}"
    )
    for doomed in (name, name + "2"):
        assert probe.call("DELETE", f"/connectors/{quote(doomed, safe='')}").status_code == 204


async def test_concurrent_creates_of_one_name_give_exactly_one_201(
    probe: Probe, tmp_path: Path
) -> None:
    async with httpx.AsyncClient(auth=AUTH, timeout=120) as client:

        async def create(attempt: int) -> int:
            config = generator_config(tmp_path / str(attempt), 1)
            body = {"name": "raced", "config": config, "initial_state": "STOPPED"}
            answer = await client.post(f"{probe.worker.url}/connectors", json=body)
            return answer.status_code

        codes = await asyncio.gather(*(create(i) for i in range(50)))
    assert sorted(set(codes)) == [201, 409]
    assert codes.count(201) == 1
    winner = codes.index(201)
    stored = probe.call("GET", "/connectors/raced/config").json()
    assert stored["output.path"] == str(tmp_path / str(winner))
    assert probe.call("DELETE", "/connectors/raced").status_code == 204


def test_outputs_may_not_overlap_nor_lie_in_the_checkpoints(probe: Probe, tmp_path: Path) -> None:
    assert probe.create("owner", generator_config(tmp_path / "owned", 1)).status_code == 201
    try:
        inside = error_of(
            probe.create("intruder", generator_config(tmp_path / "owned" / "x", 1)), 400
        )
        assert "output.path" in inside and "connector owner" in inside
        above = error_of(probe.create("intruder", generator_config(tmp_path, 1)), 400)
        assert "connector owner" in above
        checkpoints = probe.worker.checkpoint_root / "owner"
        in_root = error_of(probe.create("intruder", generator_config(checkpoints, 1)), 400)
        assert "checkpoint.root" in in_root
        reader = {
            "connector.class": "files-to-kafka",
            "input.path": str(probe.worker.checkpoint_root),
            "kafka.bootstrap.servers": probe.worker.bootstrap_servers,
            "topic": "t",
        }
        assert "input.path" in error_of(probe.create("reader", reader), 400)
        again = probe.call(
            "PUT", "/connectors/owner/config", json=generator_config(tmp_path / "owned", 1)
        )
        assert again.status_code == 200, again.text
        assert "intruder" not in probe.call("GET", "/connectors").json()
    finally:
        probe.call("DELETE", "/connectors/owner")


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"tasks.max": "99999999999999999999999999999"}, "tasks.max"),
        ({"tasks.max": "1001"}, "tasks.max.limit"),
        ({"rows.per.second": str(10**19)}, "rows.per.second"),
        ({"batch.interval.ms": str(2**31)}, "batch.interval.ms"),
        (
            {"tasks.max": "2", **{f"padding.{i}": "x" * 40_000 for i in range(15)}},
            "task configs",
        ),
    ],
)
def test_limits_are_a_400_naming_the_setting(
    probe: Probe, tmp_path: Path, overrides: dict[str, str], key: str
) -> None:
    config = {**generator_config(tmp_path, 1), **overrides}
    assert key in error_of(probe.create("limited", config), 400)
    assert "limited" not in probe.call("GET", "/connectors").json()


@pytest.mark.parametrize("scope", ["worker", "cluster"])
def test_logger_names_cannot_forge_log_lines(probe: Probe, scope: str) -> None:
    answer = probe.call(
        "PUT", f"/admin/loggers/foo%0A2026-01-01 ERROR forged?scope={scope}", json={"level": "INFO"}
    )
    assert "logger name" in error_of(answer, 400)


def test_a_client_can_create_only_so_many_loggers(probe: Probe) -> None:
    codes = [
        probe.call("PUT", f"/admin/loggers/probe.made.{i}", json={"level": "DEBUG"}).status_code
        for i in range(MAX_CREATED_LOGGERS + 1)
    ]
    assert codes[:MAX_CREATED_LOGGERS] == [200] * MAX_CREATED_LOGGERS
    assert codes[-1] == 400
    existing = probe.call("PUT", "/admin/loggers/probe.made.0", json={"level": "INFO"})
    assert existing.status_code == 200


def test_credentials_are_checked_before_the_body_is_read(probe: Probe) -> None:
    """Headers announce a large body that never comes: only a server that reads the body
    first would wait for it."""
    with socket.create_connection(("127.0.0.1", probe.worker.rest_port), timeout=10) as sock:
        sock.sendall(
            b"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 900000\r\n\r\n{"
        )
        answer = sock.recv(200)
    assert answer.startswith(b"HTTP/1.1 401"), answer


def test_offsets_of_a_task_that_does_not_exist_are_refused(probe: Probe, tmp_path: Path) -> None:
    assert probe.create("offsets", generator_config(tmp_path, 1)).status_code == 201
    try:
        body = {"offsets": [{"partition": {"task": 7}, "offset": None}]}
        assert "task 7" in error_of(
            probe.call("PATCH", "/connectors/offsets/offsets", json=body), 400
        )
        huge = {"offsets": [{"partition": {"task": 10**30}, "offset": None}]}
        assert probe.call("PATCH", "/connectors/offsets/offsets", json=huge).status_code == 400
    finally:
        probe.call("DELETE", "/connectors/offsets")


def test_an_offset_spark_could_not_read_back_is_refused(probe: Probe, tmp_path: Path) -> None:
    """JSON's `NaN`, which Python's parser reads, once went into the checkpoint as is."""
    assert probe.create("nan-offsets", generator_config(tmp_path, 1)).status_code == 201
    try:
        for offset in ("NaN", "1.5", "true", "-1", str(2**63)):
            body = (
                f'{{"offsets": [{{"partition": {{"task": 0}}, "offset": {{"offset": {offset}}}}}]}}'
            )
            answer = probe.call(
                "PATCH",
                "/connectors/nan-offsets/offsets",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            message = error_of(answer, 400)
            assert message.startswith("offsets[0].offset.offset must be an integer"), message
        probe.alive()
    finally:
        probe.call("DELETE", "/connectors/nan-offsets")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/connectors"),
        ("PUT", "/connectors/bounded/config"),
        ("PATCH", "/connectors/bounded/config"),
        ("PUT", "/connector-plugins/generator/config/validate"),
    ],
)
def test_a_config_of_60000_keys_is_refused_before_it_is_queued(
    probe: Probe, tmp_path: Path, method: str, path: str
) -> None:
    config = {**generator_config(tmp_path, 1), **{str(i): "v" for i in range(60_000)}}
    body = {"name": "bounded", "config": config} if method == "POST" else config
    answer = probe.call(method, path, json=body)
    assert "at most 1000 keys (got 60005)" in error_of(answer, 400)
    assert "bounded" not in probe.call("GET", "/connectors").json()
    probe.alive()


def kafka_to_files(probe: Probe, output: Path, sql: str) -> dict[str, str]:
    return {
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": probe.worker.bootstrap_servers,
        "topics": "probe-topic",
        "output.path": str(output),
        "transform.sql": sql,
    }


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        (
            "INSERT OVERWRITE DIRECTORY '{marker}' USING csv "
            "SELECT TRANSFORM('x') USING 'touch {marker}-{run}' AS (o STRING)",
            "transform.sql",
        ),
        ("SELECT * FROM source CROSS JOIN text.`/etc/hostname`", "transform.sql"),
        ("SELECT reflect('java.lang.Runtime', 'getRuntime') FROM source", "reflect"),
        ("SELECT * FROM source; SELECT 1", "transform.sql"),
        (
            "WITH `text.{marker}` AS (SELECT * FROM source) SELECT * FROM text.`{marker}`",
            "not text.",
        ),
        ("SELECT explode(sequence(1, 400000000)) FROM source", "maxGeneratedElements"),
    ],
)
def test_transform_sql_is_a_query_over_source_and_nothing_else(
    probe: Probe, tmp_path: Path, sql: str, fragment: str
) -> None:
    marker = tmp_path / "marker"
    attack = sql.format(marker=marker, run=RUN_ID)
    config = kafka_to_files(probe, tmp_path / "out", attack)
    message = error_of(probe.create("sql", config), 400)
    assert "transform.sql" in message and fragment in message
    validated = probe.call(
        "PUT", "/connector-plugins/kafka-to-files/config/validate", json=config
    ).json()
    [entry] = [c for c in validated["configs"] if c["definition"]["name"] == "transform.sql"]
    assert entry["value"]["errors"], validated
    assert not marker.exists() and not Path(f"{marker}-{RUN_ID}").exists()
    probe.alive()


def test_config_providers_keep_secrets_out_of_the_config_topic(probe: Probe) -> None:
    output = probe.root / "provided-output"
    placeholder = f"${{file:{probe.secrets / 'paths.properties'}:out}}"
    config = {
        "connector.class": "generator",
        "tasks.max": "1",
        "rows.per.second": "${env:PROBE_RATE}",
        "batch.interval.ms": "1000",
        "output.path": placeholder,
    }
    assert probe.create("provided", config, state="RUNNING").status_code == 201
    try:
        stored = probe.call("GET", "/connectors/provided/config").json()
        assert stored["output.path"] == placeholder
        assert stored["rows.per.second"] == "${env:PROBE_RATE}"
        [task] = probe.call("GET", "/connectors/provided/tasks").json()
        assert task["config"]["output.path"] == placeholder
        wait_until(
            lambda: list((output / "task-0").glob("*.parquet")), 180, what="the task's output"
        )
    finally:
        probe.call("DELETE", "/connectors/provided")


@pytest.mark.parametrize(
    "value",
    [
        "${file:/etc/passwd:root}",
        "${env:OTHER_SECRET}",
        "${env:PROBE_MISSING}",
        "${vault:secret/x:y}",
        "${dir:/etc:hostname}",
    ],
)
def test_a_placeholder_that_cannot_be_resolved_is_a_400(
    probe: Probe, tmp_path: Path, value: str
) -> None:
    config = {**generator_config(tmp_path, 1), "output.path": value}
    message = error_of(probe.create("unresolved", config), 400)
    assert "output.path" in message and SECRET not in message
    validated = probe.call("PUT", "/connector-plugins/generator/config/validate", json=config)
    [entry] = [c for c in validated.json()["configs"] if c["definition"]["name"] == "output.path"]
    assert entry["value"]["errors"] and SECRET not in validated.text


def test_a_placeholder_that_stops_resolving_fails_the_task_with_a_clear_trace(
    probe: Probe, tmp_path: Path
) -> None:
    rate = probe.secrets / "vanishing-rate"
    rate.write_text("5")
    placeholder = f"${{dir:{probe.secrets}:vanishing-rate}}"
    config = {**generator_config(tmp_path, 1), "rows.per.second": placeholder}
    assert probe.create("vanishing", config, state="RUNNING").status_code == 201
    try:
        wait_until(
            lambda: probe.call("GET", "/connectors/vanishing/status").json()["tasks"],
            120,
            what="the task to be assigned",
        )
        rate.unlink()
        assert probe.call("POST", "/connectors/vanishing/tasks/0/restart").status_code == 204

        def failed_trace() -> str | None:
            task = probe.call("GET", "/connectors/vanishing/tasks/0/status").json()
            return task.get("trace") if task["state"] == "FAILED" else None

        trace = wait_until(failed_trace, 120, what="the task to fail")
        assert f"rows.per.second: cannot resolve {placeholder}" in trace
    finally:
        probe.call("DELETE", "/connectors/vanishing")


def test_an_invalid_secret_is_reported_by_its_placeholder_only(
    probe: Probe, tmp_path: Path
) -> None:
    placeholder = f"${{dir:{probe.secrets}:rate}}"
    config = {**generator_config(tmp_path, 1), "rows.per.second": placeholder}
    message = error_of(probe.create("leaky", config), 400)
    assert "rows.per.second" in message and placeholder in message
    assert SECRET not in message
    validated = probe.call("PUT", "/connector-plugins/generator/config/validate", json=config)
    assert SECRET not in validated.text


def test_a_failed_tasks_trace_shows_the_placeholder_not_the_secret(
    probe: Probe, tmp_path: Path
) -> None:
    """Spark's error quotes the path it could not write, which here holds a secret: the
    status, the REST answer and the worker's log show its placeholder instead."""
    secret = "path-secret-4f1e9"
    (probe.secrets / "subdir").write_text(secret)
    (tmp_path / secret).write_text("a file, where Spark needs a directory")
    placeholder = f"${{dir:{probe.secrets}:subdir}}"
    config = {**generator_config(tmp_path, 1), "output.path": f"{tmp_path}/{placeholder}/out"}
    assert probe.create("leaky-trace", config, state="RUNNING").status_code == 201
    try:

        def failed_trace() -> str | None:
            answer = probe.call("GET", "/connectors/leaky-trace/tasks/0/status")
            task = answer.json() if answer.status_code == 200 else {}
            return task.get("trace") if task.get("state") == "FAILED" else None

        trace = wait_until(failed_trace, 120, what="the task to fail")
        assert placeholder in trace
        assert secret not in trace
        expanded = probe.call("GET", "/connectors?expand=status")
        assert placeholder in expanded.text and secret not in expanded.text
    finally:
        probe.call("DELETE", "/connectors/leaky-trace")
    assert secret not in probe.worker.log_text()
    probe.alive()


def listening_sockets(root: int) -> set[tuple[str, str]]:
    """(address, port), as /proc/net shows them in hex, of every TCP socket in LISTEN
    state held by process `root` or any of its descendants (Spark's JVM runs in a
    session of its own, so its process group would miss it)."""
    inodes: set[str] = set()
    for pid in process_tree(root):
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:[") : -1])
        except OSError:
            continue
    sockets = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                address, port = fields[1].rsplit(":", 1)
                sockets.add((address, port))
    return sockets


LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def test_spark_listens_on_loopback_only(probe: Probe, tmp_path: Path) -> None:
    """REST, the py4j gateway, Spark's driver RPC and its block manager: all on loopback.
    Validating a transform.sql makes the worker start its SparkSession."""
    config = kafka_to_files(probe, tmp_path, "SELECT * FROM source")
    validate = probe.call("PUT", "/connector-plugins/kafka-to-files/config/validate", json=config)
    assert validate.json()["error_count"] == 0, validate.text
    assert probe.worker.process is not None
    worker = probe.worker.process.pid

    def all_listening() -> set[tuple[str, str]] | None:
        found = listening_sockets(worker)
        return found if len(found) >= 4 else None

    sockets = wait_until(
        all_listening, 60, what="REST, py4j, the driver and the block manager listening"
    )
    assert {address for address, _ in sockets} <= LOOPBACK, sockets
