"""One scripted sequence of REST calls, sent to Kafka Connect and to sparkherd, and the
comparison of their answers: the differential REST check of
`tests/integration/test_versus_kafka_connect_rest.py` and of
`tests/bench/versus_kafka_connect.py`.

Each system gets exactly the same calls in the same order (`run_script`); what differs is
only what must (`RestTarget`: the connector's config and plugin, a logger the worker
has). An answer is compared by what a client relies on (`Answer.describe`): the status
code, the body's top-level keys (for a list, the keys of its elements; for a map keyed
by names, such as a config or the loggers, the keys of its values) and `error_code`.
Messages are kept for the report but never compared.

Between calls the script waits for the state the next call needs (a connector RUNNING,
PAUSED, STOPPED; offsets committed), so the answers do not depend on timing.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import httpx

from tests.support.cluster import generator_config
from tests.support.kafka_connect import (
    VERIFIABLE_SOURCE,
    ConnectWorker,
    connect_jars,
    verifiable_source_config,
)
from tests.support.kafka_topics import new_topic
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port

CONNECTOR: Final = "diff"
"""The connector the script lives with from creation to deletion."""
PUT_CREATED: Final = "diff-put"
STOPPED_FROM_START: Final = "diff-stopped"
PINNED: Final = "diff-pinned"
"""Created with `connector.plugin.version` (KIP-891)."""
SEEDED: Final = "diff-seeded"
"""Created with `initial_offsets` (KIP-995)."""
CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"
TRANSFORM: Final = "org.apache.kafka.connect.transforms.MaskField$Value"
PREDICATE: Final = "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"
ANOTHER_VERSION: Final = "9.9.9"
NO_RANGE: Final = "[1.0"
UNKNOWN: Final = "no-such-connector"
UNKNOWN_PLUGIN: Final = "com.example.NoSuchConnector"
UNKNOWN_LOGGER: Final = "no.such.logger.anywhere"
MALFORMED: Final = b'{"truncated": '
STATE_TIMEOUT_S: Final = 180.0

EMPTY: Final = "<empty>"
TEXT: Final = "<not json>"


@dataclass(frozen=True)
class RestTarget:
    """One system under test: where it answers and what differs between the two."""

    system: str
    url: str
    config: Callable[[str], Mapping[str, str]]
    """A valid config, without `name`, of a source connector with `tasks.max` 1 for the
    connector of the name given (each writes to a place of its own)."""
    plugin: str
    """How `/connector-plugins/{plugin}` names that connector's plugin."""
    logger: str
    """A logger namespace that exists on the worker."""
    seeded: Callable[[str], Mapping[str, str]]
    """A valid config of a connector that takes `initial_offsets` (KIP-995)."""
    initial_offsets: list[dict[str, Any]]
    """Valid `initial_offsets` for the connector of `seeded`."""


@dataclass(frozen=True)
class Answer:
    label: str
    status: int
    shape: tuple[str, ...]
    error_code: int | None
    message: str
    """`message` of an error body, else the start of the body; shown, never compared."""
    body: Any = field(default=None, compare=False)
    """The JSON body, for the checks of what a few answers hold; never compared here."""

    def describe(self) -> str:
        """What is compared: `409 {error_code,message}`, plus `error_code=N` when that
        is not the status."""
        text = f"{self.status} {{{','.join(self.shape)}}}"
        if self.error_code is not None and self.error_code != self.status:
            text += f" error_code={self.error_code}"
        return text


def body_shape(body: Any, by_name: bool, nested: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Top-level keys; `[]` then the union of its elements' keys for a list; `*` then
    the union of its values' keys for a map keyed by names (`by_name`); then for each
    key in `nested`, `key{...}`: the keys of that object, or of that list's elements."""
    if isinstance(body, list):
        return ("[]", *sorted({k for item in body if isinstance(item, dict) for k in item}))
    if isinstance(body, dict):
        if by_name:
            values = body.values()
            return ("*", *sorted({k for value in values if isinstance(value, dict) for k in value}))
        inner = tuple(f"{key}{{{','.join(body_shape(body.get(key), False))}}}" for key in nested)
        return (*sorted(body), *inner)
    return (type(body).__name__,)


def answer_of(
    label: str, response: httpx.Response, by_name: bool = False, nested: tuple[str, ...] = ()
) -> Answer:
    if not response.content:
        return Answer(label, response.status_code, (EMPTY,), None, "")
    try:
        body = response.json()
    except ValueError:
        return Answer(label, response.status_code, (TEXT,), None, response.text[:200])
    error_code = body.get("error_code") if isinstance(body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    return Answer(
        label,
        response.status_code,
        body_shape(body, by_name, nested),
        error_code if isinstance(error_code, int) else None,
        str(message) if message is not None else response.text[:200],
        body,
    )


@dataclass
class ScriptRun:
    """Sends the script's calls to one target and keeps every answer."""

    target: RestTarget
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=120))
    answers: list[Answer] = field(default_factory=list)

    def call(
        self,
        label: str,
        method: str,
        path: str,
        *,
        body: Any = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
        by_name: bool = False,
        nested: tuple[str, ...] = (),
    ) -> Answer:
        """One call; `body` is sent as JSON, `raw` as it is (malformed JSON, say)."""
        content = raw if raw is not None else None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type} if content is not None else {}
        response = self.client.request(
            method, f"{self.target.url}{path}", content=content, headers=headers
        )
        answer = answer_of(label, response, by_name, nested)
        self.answers.append(answer)
        return answer

    def get(self, path: str) -> Any:
        response = self.client.get(f"{self.target.url}{path}")
        response.raise_for_status()
        return response.json()

    def wait_state(self, name: str, state: str, tasks: int) -> None:
        """Until the connector and exactly `tasks` tasks are in `state` (STOPPED: none)."""

        def look() -> tuple[str, list[str]]:
            status = self.get(f"/connectors/{name}/status")
            return status["connector"]["state"], [t["state"] for t in status["tasks"]]

        wait_until(
            look,
            STATE_TIMEOUT_S,
            what=f"{self.target.system}: {name} {state} with {tasks} task(s)",
            until=lambda seen: seen == (state, [state] * tasks),
        )

    def wait_offsets(self, name: str) -> list[dict[str, Any]]:
        """Until the connector has committed offsets; they are returned."""
        offsets: list[dict[str, Any]] = wait_until(
            lambda: self.get(f"/connectors/{name}/offsets")["offsets"],
            STATE_TIMEOUT_S,
            what=f"{self.target.system}: {name} to commit offsets",
        )
        return offsets

    def close(self) -> None:
        self.client.close()


def run_script(target: RestTarget) -> list[Answer]:
    """The whole sequence against one worker of a group of its own; the answers in order.

    Raises `AssertionError` (from a wait) if the system never reaches a state the script
    needs next: that is a failure of the system, not a difference to report."""
    run = ScriptRun(target)
    try:
        for part in SCRIPT:
            part(run)
    except AssertionError as exc:
        recent = "\n".join(
            f"  {a.label}: {a.describe()} {a.message[:300]!r}" for a in run.answers[-4:]
        )
        raise AssertionError(f"{exc}\nthe last answers of {target.system}:\n{recent}") from None
    finally:
        run.close()
    return run.answers


# --- the script, in parts ----------------------------------------------------------------

C = f"/connectors/{CONNECTOR}"


def config_of(run: ScriptRun, name: str = CONNECTOR, **changes: str | None) -> dict[str, Any]:
    """The target's valid config for connector `name` with `changes` (`tasks_max` for
    `tasks.max`; None removes the key)."""
    config: dict[str, Any] = dict(run.target.config(name))
    for key, value in changes.items():
        if value is None:
            config.pop(key.replace("_", "."), None)
        else:
            config[key.replace("_", ".")] = value
    return config


def server_and_plugins(run: ScriptRun) -> None:
    plugin = f"/connector-plugins/{run.target.plugin}"
    run.call("GET /", "GET", "/")
    run.call("GET /health", "GET", "/health")
    run.call("GET /connectors (none yet)", "GET", "/connectors")
    run.call("GET /connector-plugins", "GET", "/connector-plugins")
    run.call(
        "GET /connector-plugins?connectorsOnly=false",
        "GET",
        "/connector-plugins?connectorsOnly=false",
    )
    run.call("GET /connector-plugins/{p}/config", "GET", f"{plugin}/config")
    run.call(
        "GET /connector-plugins/{unknown}/config",
        "GET",
        f"/connector-plugins/{UNKNOWN_PLUGIN}/config",
    )
    run.call(
        "PUT /connector-plugins/{p}/config/validate (valid)",
        "PUT",
        f"{plugin}/config/validate",
        body=config_of(run),
    )
    run.call(
        "PUT /connector-plugins/{p}/config/validate (tasks.max not a number)",
        "PUT",
        f"{plugin}/config/validate",
        body=config_of(run, tasks_max="many"),
    )
    run.call(
        "PUT /connector-plugins/{p}/config/validate (connector.class of another plugin)",
        "PUT",
        f"{plugin}/config/validate",
        body=config_of(run, connector_class=UNKNOWN_PLUGIN),
    )
    run.call(
        "PUT /connector-plugins/{unknown}/config/validate",
        "PUT",
        f"/connector-plugins/{UNKNOWN_PLUGIN}/config/validate",
        body={**config_of(run), "connector.class": UNKNOWN_PLUGIN},
    )
    run.call(
        "PUT /connector-plugins/{p}/config/validate (malformed JSON)",
        "PUT",
        f"{plugin}/config/validate",
        raw=MALFORMED,
    )
    for kind, name in (
        ("converter", CONVERTER),
        ("transform", TRANSFORM),
        ("predicate", PREDICATE),
    ):
        run.call(
            f"GET /connector-plugins/{{{kind}}}/config", "GET", f"/connector-plugins/{name}/config"
        )
    for label, version in (
        ("latest", "latest"),
        ("another", ANOTHER_VERSION),
        ("no range", NO_RANGE),
    ):
        run.call(
            f"GET /connector-plugins/{{p}}/config?version= ({label})",
            "GET",
            f"{plugin}/config?version={quote(version)}",
        )


def plugin_version(run: ScriptRun) -> str:
    """The version the target's listing gives its connector's plugin."""
    listed = run.get("/connector-plugins")
    plugin = next(p for p in listed if run.target.plugin in (p["class"], p.get("alias")))
    version: str = plugin["version"]
    return version


def versions(run: ScriptRun) -> None:
    """KIP-891: `version` in every state, `*.plugin.version` right and wrong."""
    run.call(
        "GET /connectors/{c}/status (the states' keys)",
        "GET",
        f"{C}/status",
        nested=("connector", "tasks"),
    )

    def post(label: str, **changes: str) -> None:
        body = {"name": PINNED, "config": config_of(run, PINNED, **changes)}
        run.call(f"POST /connectors ({label})", "POST", "/connectors", body=body)

    post("connector.plugin.version another", connector_plugin_version=ANOTHER_VERSION)
    post("connector.plugin.version no range", connector_plugin_version=NO_RANGE)
    post(
        "value.converter.plugin.version another",
        value_converter=CONVERTER,
        value_converter_plugin_version=ANOTHER_VERSION,
    )
    post("connector.plugin.version the plugin's", connector_plugin_version=plugin_version(run))
    run.wait_state(PINNED, "RUNNING", 1)
    run.call("DELETE /connectors/{c} (pinned version)", "DELETE", f"/connectors/{PINNED}")


def initial_offsets(run: ScriptRun) -> None:
    """KIP-995: `initial_offsets` right (created STOPPED, so no task runs) and wrong."""
    wrong = [{"partition": {"task": 0}, "offset": {"offset": -1}}]
    for label, offsets in (("right", run.target.initial_offsets), ("wrong", wrong)):
        body = {
            "name": SEEDED,
            "config": run.target.seeded(SEEDED),
            "initial_state": "STOPPED",
            "initial_offsets": offsets,
        }
        run.call(f"POST /connectors (initial_offsets {label})", "POST", "/connectors", body=body)
        run.client.delete(f"{run.target.url}/connectors/{SEEDED}")


def create(run: ScriptRun) -> None:
    def post(label: str, body: Any = None, **kwargs: Any) -> None:
        run.call(f"POST /connectors ({label})", "POST", "/connectors", body=body, **kwargs)

    post("tasks.max not a number", {"name": CONNECTOR, "config": config_of(run, tasks_max="many")})
    post("tasks.max 0", {"name": CONNECTOR, "config": config_of(run, tasks_max="0")})
    post(
        "unknown plugin",
        {"name": CONNECTOR, "config": config_of(run, connector_class=UNKNOWN_PLUGIN)},
    )
    post("no connector.class", {"name": CONNECTOR, "config": config_of(run, connector_class=None)})
    post("no name", {"config": config_of(run)})
    post("blank name", {"name": "   ", "config": config_of(run)})
    post("no config", {"name": CONNECTOR})
    post(
        "unknown initial_state", {"name": CONNECTOR, "config": config_of(run), "initial_state": "X"}
    )
    post("body a JSON list", [CONNECTOR])
    post("malformed JSON", raw=MALFORMED)
    post(
        "JSON sent as text/plain",
        raw=json.dumps({"name": CONNECTOR, "config": config_of(run)}).encode(),
        content_type="text/plain",
    )
    post("valid", {"name": CONNECTOR, "config": config_of(run)})
    post("duplicate", {"name": CONNECTOR, "config": config_of(run)})
    run.wait_state(CONNECTOR, "RUNNING", 1)


def read(run: ScriptRun) -> None:
    run.call("GET /connectors", "GET", "/connectors")
    run.call("GET /connectors?expand=status", "GET", "/connectors?expand=status", by_name=True)
    run.call("GET /connectors?expand=info", "GET", "/connectors?expand=info", by_name=True)
    run.call(
        "GET /connectors?expand=status&expand=info",
        "GET",
        "/connectors?expand=status&expand=info",
        by_name=True,
    )
    run.call("GET /connectors?expand=unknown", "GET", "/connectors?expand=unknown", by_name=True)
    run.call("GET /connectors/{c}", "GET", C)
    run.call("GET /connectors/{c}/config", "GET", f"{C}/config", by_name=True)
    run.call("GET /connectors/{c}/status", "GET", f"{C}/status")
    run.call("GET /connectors/{c}/tasks", "GET", f"{C}/tasks")
    run.call("GET /connectors/{c}/tasks/0/status", "GET", f"{C}/tasks/0/status")
    run.call("GET /connectors/{c}/tasks/99/status", "GET", f"{C}/tasks/99/status")
    run.call("GET /connectors/{c}/tasks/abc/status", "GET", f"{C}/tasks/abc/status")
    run.call("GET /connectors/{c}/tasks-config (removed in 4.0)", "GET", f"{C}/tasks-config")


def unknown_connector(run: ScriptRun) -> None:
    u = f"/connectors/{UNKNOWN}"
    for method, suffix in (
        ("GET", ""),
        ("GET", "/config"),
        ("GET", "/status"),
        ("GET", "/tasks"),
        ("GET", "/tasks/0/status"),
        ("GET", "/offsets"),
        ("DELETE", ""),
        ("DELETE", "/offsets"),
        ("POST", "/restart"),
        ("POST", "/restart?includeTasks=true"),
        ("POST", "/tasks/0/restart"),
        ("PUT", "/pause"),
        ("PUT", "/resume"),
        ("PUT", "/stop"),
    ):
        run.call(f"{method} /connectors/{{unknown}}{suffix}", method, f"{u}{suffix}")
    run.call(
        "PATCH /connectors/{unknown}/config",
        "PATCH",
        f"{u}/config",
        body={"tasks.max": "1"},
    )
    run.call(
        "PATCH /connectors/{unknown}/offsets",
        "PATCH",
        f"{u}/offsets",
        body={"offsets": [{"partition": {"task": 0}, "offset": {"seqno": 1}}]},
    )


def configs(run: ScriptRun) -> None:
    def put(label: str, body: Any = None, path: str = f"{C}/config", **kwargs: Any) -> None:
        run.call(f"PUT /connectors/{{c}}/config ({label})", "PUT", path, body=body, **kwargs)

    put("same config", config_of(run))
    put("tasks.max as a JSON number", {**config_of(run), "tasks.max": 1})
    put("tasks.max not a number", config_of(run, tasks_max="many"))
    put("unknown plugin", config_of(run, connector_class=UNKNOWN_PLUGIN))
    put("name differs from the path", {**config_of(run), "name": "another-name"})
    put("body a JSON list", ["tasks.max"])
    put("malformed JSON", raw=MALFORMED)
    put(
        "new connector",
        config_of(run, PUT_CREATED),
        path=f"/connectors/{PUT_CREATED}/config",
    )
    run.call("DELETE /connectors/{c} (created by PUT)", "DELETE", f"/connectors/{PUT_CREATED}")

    def patch(label: str, body: Any = None, **kwargs: Any) -> None:
        run.call(
            f"PATCH /connectors/{{c}}/config ({label})", "PATCH", f"{C}/config", body=body, **kwargs
        )

    patch("add a key", {"x.differential.note": "added"})
    patch("remove a key with null", {"x.differential.note": None})
    patch("tasks.max not a number", {"tasks.max": "many"})
    patch("malformed JSON", raw=MALFORMED)
    run.wait_state(CONNECTOR, "RUNNING", 1)


def restarts(run: ScriptRun) -> None:
    for query, label in (
        ("", "plain"),
        ("?includeTasks=true", "includeTasks"),
        ("?onlyFailed=true", "onlyFailed"),
        ("?includeTasks=true&onlyFailed=true", "includeTasks and onlyFailed"),
        ("?includeTasks=false&onlyFailed=false", "both false"),
        ("?includeTasks=maybe", "includeTasks not a boolean"),
    ):
        run.call(f"POST /connectors/{{c}}/restart ({label})", "POST", f"{C}/restart{query}")
        run.wait_state(CONNECTOR, "RUNNING", 1)
    run.call("POST /connectors/{c}/tasks/0/restart", "POST", f"{C}/tasks/0/restart")
    run.wait_state(CONNECTOR, "RUNNING", 1)
    run.call("POST /connectors/{c}/tasks/99/restart", "POST", f"{C}/tasks/99/restart")
    run.call("POST /connectors/{c}/tasks/abc/restart", "POST", f"{C}/tasks/abc/restart")


def offsets_body(offsets: list[dict[str, Any]]) -> dict[str, Any]:
    """The first committed partition with its own offset: valid for either system."""
    first = offsets[0]
    return {"offsets": [{"partition": first["partition"], "offset": first["offset"]}]}


def states_and_offsets(run: ScriptRun) -> None:
    committed = run.wait_offsets(CONNECTOR)
    valid = offsets_body(committed)
    run.call("GET /connectors/{c}/offsets (RUNNING)", "GET", f"{C}/offsets")
    run.call("PATCH /connectors/{c}/offsets (RUNNING)", "PATCH", f"{C}/offsets", body=valid)
    run.call("DELETE /connectors/{c}/offsets (RUNNING)", "DELETE", f"{C}/offsets")

    run.call("PUT /connectors/{c}/pause", "PUT", f"{C}/pause")
    run.wait_state(CONNECTOR, "PAUSED", 1)
    run.call("PUT /connectors/{c}/pause (PAUSED)", "PUT", f"{C}/pause")
    run.call("GET /connectors/{c}/status (PAUSED)", "GET", f"{C}/status")
    run.call("PATCH /connectors/{c}/offsets (PAUSED)", "PATCH", f"{C}/offsets", body=valid)
    run.call("PUT /connectors/{c}/resume", "PUT", f"{C}/resume")
    run.wait_state(CONNECTOR, "RUNNING", 1)
    run.call("PUT /connectors/{c}/resume (RUNNING)", "PUT", f"{C}/resume")

    run.call("PUT /connectors/{c}/stop", "PUT", f"{C}/stop")
    run.wait_state(CONNECTOR, "STOPPED", 0)
    run.call("PUT /connectors/{c}/stop (STOPPED)", "PUT", f"{C}/stop")
    run.call("GET /connectors/{c}/status (STOPPED)", "GET", f"{C}/status")
    run.call("GET /connectors/{c}/tasks (STOPPED)", "GET", f"{C}/tasks")
    run.call("GET /connectors/{c}/offsets (STOPPED)", "GET", f"{C}/offsets")
    run.call("POST /connectors/{c}/restart (STOPPED)", "POST", f"{C}/restart")
    run.call(
        "POST /connectors/{c}/restart?includeTasks=true (STOPPED)",
        "POST",
        f"{C}/restart?includeTasks=true",
    )
    run.wait_state(CONNECTOR, "STOPPED", 0)

    def patch(label: str, body: Any = None, **kwargs: Any) -> None:
        run.call(
            f"PATCH /connectors/{{c}}/offsets (STOPPED, {label})",
            "PATCH",
            f"{C}/offsets",
            body=body,
            **kwargs,
        )

    patch("committed offset", valid)
    patch(
        "null offset resets the partition", {"offsets": [{**valid["offsets"][0], "offset": None}]}
    )
    patch("empty list", {"offsets": []})
    patch("no offsets key", {})
    patch(
        "a partition the connector never had",
        {"offsets": [{"partition": {"no.such.key": 7}, "offset": {"seqno": 1}}]},
    )
    patch("malformed JSON", raw=MALFORMED)
    run.call("DELETE /connectors/{c}/offsets (STOPPED)", "DELETE", f"{C}/offsets")
    run.call("GET /connectors/{c}/offsets (after reset)", "GET", f"{C}/offsets")
    run.call("PUT /connectors/{c}/resume (STOPPED)", "PUT", f"{C}/resume")
    run.wait_state(CONNECTOR, "RUNNING", 1)

    stopped = f"/connectors/{STOPPED_FROM_START}"
    run.call(
        "POST /connectors (initial_state STOPPED)",
        "POST",
        "/connectors",
        body={
            "name": STOPPED_FROM_START,
            "config": config_of(run, STOPPED_FROM_START),
            "initial_state": "STOPPED",
        },
    )
    run.wait_state(STOPPED_FROM_START, "STOPPED", 0)
    run.call("GET /connectors/{c}/offsets (never ran)", "GET", f"{stopped}/offsets")
    run.call("PATCH /connectors/{c}/offsets (never ran)", "PATCH", f"{stopped}/offsets", body=valid)
    run.call("DELETE /connectors/{c}/offsets (never ran)", "DELETE", f"{stopped}/offsets")
    run.call("DELETE /connectors/{c} (never ran)", "DELETE", stopped)


def loggers(run: ScriptRun) -> None:
    logger = f"/admin/loggers/{run.target.logger}"
    run.call("GET /admin/loggers", "GET", "/admin/loggers", by_name=True)
    run.call("GET /admin/loggers/root", "GET", "/admin/loggers/root")
    run.call("GET /admin/loggers/{unknown}", "GET", f"/admin/loggers/{UNKNOWN_LOGGER}")
    run.call("PUT /admin/loggers/{l} (DEBUG)", "PUT", logger, body={"level": "DEBUG"})
    run.call("GET /admin/loggers/{l} (after PUT)", "GET", logger)
    run.call("PUT /admin/loggers/{l} (same level again)", "PUT", logger, body={"level": "DEBUG"})
    run.call("PUT /admin/loggers/{l} (lower-case level)", "PUT", logger, body={"level": "info"})
    run.call(
        "PUT /admin/loggers/{l}?scope=worker",
        "PUT",
        f"{logger}?scope=worker",
        body={"level": "WARN"},
    )
    run.call(
        "PUT /admin/loggers/{l}?scope=cluster",
        "PUT",
        f"{logger}?scope=cluster",
        body={"level": "INFO"},
    )
    run.call(
        "PUT /admin/loggers/{l}?scope=unknown",
        "PUT",
        f"{logger}?scope=galaxy",
        body={"level": "INFO"},
    )
    run.call("PUT /admin/loggers/{l} (unknown level)", "PUT", logger, body={"level": "LOUD"})
    run.call("PUT /admin/loggers/{l} (no level)", "PUT", logger, body={})
    run.call("PUT /admin/loggers/{l} (malformed JSON)", "PUT", logger, raw=MALFORMED)
    run.call(
        "PUT /admin/loggers/{unknown} (creates it)",
        "PUT",
        f"/admin/loggers/{UNKNOWN_LOGGER}",
        body={"level": "INFO"},
    )
    run.call("GET /admin/loggers (after PUTs)", "GET", "/admin/loggers", by_name=True)


def wrong_methods(run: ScriptRun) -> None:
    for method, path in (
        ("DELETE", "/connectors"),
        ("PUT", "/connectors"),
        ("POST", f"{C}/config"),
        ("DELETE", f"{C}/config"),
        ("GET", f"{C}/restart"),
        ("POST", f"{C}/pause"),
        ("GET", f"{C}/stop"),
        ("POST", f"{C}/offsets"),
        ("PUT", "/health"),
        ("POST", "/connector-plugins"),
        ("GET", f"/connector-plugins/{run.target.plugin}/config/validate"),
        ("DELETE", "/admin/loggers"),
    ):
        shown = path.replace(C, "/connectors/{c}").replace(run.target.plugin, "{p}")
        run.call(f"{method} {shown} (wrong method)", method, path)
    run.call("GET /no/such/path", "GET", "/no/such/path")


def delete(run: ScriptRun) -> None:
    run.call("DELETE /connectors/{c}", "DELETE", C)
    wait_until(
        lambda: CONNECTOR not in run.get("/connectors"),
        STATE_TIMEOUT_S,
        what=f"{run.target.system}: {CONNECTOR} to be gone",
    )
    run.call("DELETE /connectors/{c} (deleted)", "DELETE", C)
    run.call("GET /connectors/{c} (deleted)", "GET", C)
    run.call("GET /connectors (after delete)", "GET", "/connectors")


SCRIPT: Final[tuple[Callable[[ScriptRun], None], ...]] = (
    server_and_plugins,
    create,
    read,
    versions,
    initial_offsets,
    unknown_connector,
    configs,
    restarts,
    states_and_offsets,
    loggers,
    wrong_methods,
    delete,
)


# --- both systems ------------------------------------------------------------------------


def sparkherd_target(url: str, output: Path, bootstrap_servers: str, topic: str) -> RestTarget:
    """`topic`: one the connector created with `initial_offsets` (a sink) reads."""

    def config(name: str) -> dict[str, str]:
        # A batch a second: the states and offsets the script waits for come sooner.
        return {**generator_config(output / name, 1), "batch.interval.ms": "1000"}

    def seeded(name: str) -> dict[str, str]:
        return {
            "connector.class": "kafka-to-files",
            "kafka.bootstrap.servers": bootstrap_servers,
            "topics": topic,
            "output.path": str(output / name),
        }

    offsets = [
        {
            "partition": {"kafka_topic": topic, "kafka_partition": 0},
            "offset": {"kafka_offset": 100},
        }
    ]
    return RestTarget("sparkherd", url, config, "generator", "herder", seeded, offsets)


def connect_target(url: str) -> RestTarget:
    def config(name: str) -> dict[str, str]:
        return verifiable_source_config(f"{name}-records", 1, 10)

    return RestTarget(
        "connect",
        url,
        config,
        VERIFIABLE_SOURCE,
        "org.apache.kafka.connect.runtime",
        config,
        [{"partition": {"id": 0}, "offset": {"seqno": 100}}],
    )


@dataclass(frozen=True)
class Differential:
    connect: list[Answer]
    sparkherd: list[Answer]
    seconds: Mapping[str, float] = field(default_factory=dict)
    """Wall time of each phase: both workers ready, and each system's script."""

    @property
    def mismatches(self) -> list[str]:
        return mismatches(self.connect, self.sparkherd)

    def report(self) -> str:
        return report(self.connect, self.sparkherd)


def run_differential(bootstrap_servers: str, root: Path, timeout_s: float = 180) -> Differential:
    """A Kafka Connect worker and a sparkherd worker, each alone in a group of its own on
    the same broker, started side by side; the script runs on both at once (the systems
    share nothing but the broker), then both are killed."""
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    connect_jars()
    sparkherd = WorkerProcess(
        "sparkherd-rest",
        bootstrap_servers,
        root / "checkpoints",
        logs,
        [f"group.id=sparkherd-rest-{free_port()}"],
    )
    connect = ConnectWorker("connect-rest", bootstrap_servers, f"connect-rest-{free_port()}", logs)
    seconds: dict[str, float] = {}
    started = time.monotonic()

    def timed(target: RestTarget) -> list[Answer]:
        begun = time.monotonic()
        answers = run_script(target)
        seconds[f"{target.system} script"] = round(time.monotonic() - begun, 1)
        return answers

    try:
        sparkherd.start()
        connect.start()
        connect.wait_ready(timeout_s)
        seconds["connect ready"] = round(time.monotonic() - started, 1)
        sparkherd.wait_ready(timeout_s)
        seconds["sparkherd ready"] = round(time.monotonic() - started, 1)
        topic = new_topic(bootstrap_servers, "diff-seeded", 1)
        targets = (
            connect_target(connect.url),
            sparkherd_target(sparkherd.url, root / "out", bootstrap_servers, topic),
        )
        with ThreadPoolExecutor(max_workers=2) as pool:
            connect_answers, sparkherd_answers = pool.map(timed, targets)
        return Differential(connect_answers, sparkherd_answers, seconds)
    finally:
        connect.kill()
        sparkherd.kill()


# --- the comparison ----------------------------------------------------------------------


def mismatches(reference: list[Answer], candidate: list[Answer]) -> list[str]:
    """One line per call whose answers differ: `label: connect <...>; sparkherd <...>`.

    Both lists come from `run_script`, so they hold the same labels in the same order."""
    labels = [a.label for a in reference]
    if labels != [a.label for a in candidate]:
        raise ValueError("the two runs did not make the same calls")
    if repeated := sorted(label for label, n in Counter(labels).items() if n > 1):
        raise ValueError(f"labels name more than one call: {repeated}")
    return [
        f"{a.label}: connect {a.describe()}; sparkherd {b.describe()}"
        for a, b in zip(reference, candidate, strict=True)
        if a.describe() != b.describe()
    ]


def report(reference: list[Answer], candidate: list[Answer]) -> str:
    """Every call with both answers and their messages, differences marked `!=`."""
    lines = []
    for a, b in zip(reference, candidate, strict=True):
        mark = "==" if a.describe() == b.describe() else "!="
        lines.append(f"{mark} {a.label}")
        lines.append(f"     connect   {a.describe()}  {a.message[:160]!r}")
        lines.append(f"     sparkherd {b.describe()}  {b.message[:160]!r}")
    return "\n".join(lines)


# --- the differences kept on purpose ---------------------------------------------------

BAD_BODY = (
    "Connect answers a body Jackson cannot read (malformed JSON, a list for an object, no "
    "`config`, an unknown `initial_state`) with 500, the status of its own faults, because "
    "its exception mapper knows no better; sparkherd answers 400 naming the field, as the "
    "manual's REST API page promises (500 only for internal faults), so a client does "
    "not retry a request that can never succeed."
)
INTENTIONAL: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        (
            "PUT /connector-plugins/{p}/config/validate (malformed JSON): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "POST /connectors (no config): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "POST /connectors (unknown initial_state): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "POST /connectors (body a JSON list): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "POST /connectors (malformed JSON): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "PUT /connectors/{c}/config (body a JSON list): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "PUT /connectors/{c}/config (malformed JSON): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "PATCH /connectors/{c}/config (malformed JSON): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "PATCH /connectors/{c}/offsets (STOPPED, malformed JSON): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
            "PUT /admin/loggers/{l} (malformed JSON): "
            "connect 500 {error_code,message}; sparkherd 400 {error_code,message}",
        ),
        BAD_BODY,
    ),
    "POST /connectors/{c}/restart (includeTasks not a boolean): "
    "connect 204 {<empty>}; sparkherd 400 {error_code,message}": (
        "Connect's Jersey reads any value but `true` as false, so a typo "
        "(`includeTasks=ture`) silently restarts the connector alone; sparkherd refuses a "
        "flag it cannot read."
    ),
    "PATCH /connectors/{c}/offsets (STOPPED, a partition the connector never had): "
    "connect 200 {message}; sparkherd 400 {error_code,message}": (
        "A sparkherd connector's offsets are its tasks' Spark checkpoints, one partition "
        'per task and source (`{"task", "source"}`). Connect writes any partition to its '
        "offsets topic, where no task may ever read it; sparkherd has nowhere to keep a "
        "partition that names no task, and says so rather than report a change that "
        "changes nothing."
    ),
    "PUT /admin/loggers/{l} (unknown level): "
    "connect 404 {error_code,message}; sparkherd 400 {error_code,message}": (
        "The logger is there and the level in the body is wrong: a 400 by the REST API "
        "page's rule. Connect's 404 comes from its throwing NotFoundException for a bad level, "
        "and tells a client the logger does not exist."
    ),
    "PUT /connector-plugins/{unknown}/config/validate: "
    "connect 500 {error_code,message}; sparkherd 404 {error_code,message}": (
        "Connect's own message is `BadRequestException: Failed to find any class that "
        "implements Connector` and its mapper turns it into a 500; sparkherd answers 404, "
        "as Connect itself does for GET /connector-plugins/{unknown}/config."
    ),
    **dict.fromkeys(
        (
            "GET /connector-plugins: "
            "connect 200 {[],class,type,version}; sparkherd 200 {[],alias,class,type,version}",
            "GET /connector-plugins?connectorsOnly=false: "
            "connect 200 {[],class,type,version}; sparkherd 200 {[],alias,class,type,version}",
        ),
        "`alias` is sparkherd's extension: the short name (`generator`) that configs give as "
        "`connector.class`, which the class name alone does not show. Connect's fields are "
        "all there, with their meanings.",
    ),
    **dict.fromkeys(
        (
            "GET /connectors/{c}/tasks/0/status: connect 200 {id,state,version,worker_id}; "
            "sparkherd 200 {id,started_at,state,version,worker_id}",
            "GET /connectors/{c}/status (the states' keys): connect 200 "
            "{connector,name,tasks,type,connector{state,version,worker_id},"
            "tasks{[],id,state,version,worker_id}}; sparkherd 200 "
            "{connector,name,tasks,type,connector{state,version,worker_id},"
            "tasks{[],id,started_at,state,version,worker_id}}",
        ),
        "`started_at` (when the task's current run began) is sparkherd's extension. The "
        "`tasks` entries of every status body differ the same way.",
    ),
    **dict.fromkeys(
        (
            "POST /connectors (initial_offsets right): connect 500 {error_code,message}; "
            "sparkherd 201 {config,name,offsets_status,tasks,type}",
            "POST /connectors (initial_offsets wrong): connect 500 {error_code,message}; "
            "sparkherd 400 {error_code,message}",
        ),
        "KIP-995 (`initial_offsets` in POST /connectors) is accepted but Connect 4.1 does not "
        "implement it: its Jackson refuses the unknown field with a 500, valid or not. "
        "sparkherd implements the KIP: the connector starts from the offsets given (201, "
        "with the KIP's `offsets_status`), and offsets that are wrong are a 400 that creates "
        "nothing.",
    ),
    "PATCH /connectors/{c}/offsets (never ran): "
    "connect 200 {message}; sparkherd 400 {error_code,message}": (
        "A sparkherd task's offsets live in its Spark checkpoint, which Spark writes on the "
        "first run; before that there is no checkpoint to append a batch to, and a "
        "checkpoint made up without Spark's own metadata would not be read back. Connect "
        "keeps offsets in a topic and can take them before the first run."
    ),
}
"""Differences kept on purpose: the mismatch line, and why (docs/rest-api.md says the same
to users)."""

DOCUMENTED: Final[frozenset[str]] = frozenset(INTENTIONAL)
"""What the differential must find, no more and no less."""
