"""What `sparkherd ctl` shows people for each answer of the REST API.

Each function takes a parsed answer as it came (untrusted: any JSON value) and returns
text. A field of the wrong type or missing reads as empty, so a server that answers
something unexpected gets a sparse table rather than a crash.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from sparkherd.ctl.tables import clean, fields, indent, table

PROTOCOLS = {0: "eager", 1: "cooperative", 2: "cooperative", 3: "cooperative"}
STATE_ORDER = ("RUNNING", "RESTARTING", "PAUSED", "STOPPED", "UNASSIGNED", "FAILED")


def as_dict(value: Any) -> dict[str, Any]:
    return {str(key): item for key, item in value.items()} if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def connectors_table(answer: Any) -> str:
    """`GET /connectors?expand=status&expand=info`: one row per connector."""
    if isinstance(answer, list):  # a server that ignores `expand`: names only
        answer = {clean(name): {} for name in answer}
    expanded = as_dict(answer)
    if not expanded:
        return "no connectors"
    rows = []
    for name in sorted(expanded):
        entry = as_dict(expanded[name])
        status, info = as_dict(entry.get("status")), as_dict(entry.get("info"))
        config = as_dict(info.get("config"))
        rows.append(
            (
                name,
                status.get("type") or info.get("type"),
                config.get("connector.class"),
                connector_state(status),
                task_summary(as_list(status.get("tasks"))),
            )
        )
    return table(("name", "type", "class", "state", "tasks"), rows)


def connector_state(status: Any) -> str:
    """`RUNNING (1 of 2 tasks FAILED)`: Connect keeps a connector RUNNING while its tasks
    fail (its state is the connector instance's alone), so the state alone would read
    healthy; `/ui` words it the same way."""
    state = as_dict(status)
    said = clean(as_dict(state.get("connector")).get("state"))
    tasks = as_list(state.get("tasks"))
    failed = sum(1 for task in tasks if as_dict(task).get("state") == "FAILED")
    if not failed:
        return said
    noun = "task" if len(tasks) == 1 else "tasks"
    return " ".join(part for part in (said, f"({failed} of {len(tasks)} {noun} FAILED)") if part)


def task_summary(tasks: list[Any]) -> str:
    """`2 RUNNING, 1 FAILED`; empty for no tasks."""
    counts = Counter(clean(as_dict(task).get("state")) or "UNKNOWN" for task in tasks)
    known = [state for state in STATE_ORDER if state in counts]
    order = known + sorted(set(counts) - set(known))
    return ", ".join(f"{counts[state]} {state}" for state in order)


def workers_view(answer: Any) -> str:
    """`GET /workers`: the group as this worker sees it, then one row per worker."""
    view = as_dict(answer)
    leader = view.get("leader")
    version = view.get("protocol_version")
    protocol = PROTOCOLS.get(version, "") if isinstance(version, int) else ""
    summary = fields(
        [
            ("Leader", leader),
            ("Generation", view.get("generation")),
            ("Protocol", f"{clean(version)} ({protocol})" if protocol else version),
            ("Scheduled rebalance", _milliseconds(view.get("scheduled_rebalance_ms"))),
        ]
    )
    rows = []
    for worker in as_list(view.get("workers")):
        entry = as_dict(worker)
        rows.append(
            (
                entry.get("id"),
                entry.get("url"),
                "leader" if leader is not None and entry.get("url") == leader else "",
                entry.get("state"),
                len(as_list(entry.get("connectors"))),
                len(as_list(entry.get("tasks"))),
            )
        )
    workers = table(("id", "url", "role", "state", "connectors", "tasks"), rows)
    return f"{summary}\n\n{workers}"


def plugins_table(answer: Any) -> str:
    """`GET /connector-plugins`, led by the alias a config's `connector.class` gives (a
    worker older than the `alias` field leaves that column empty)."""
    rows = [
        (entry.get("alias"), entry.get("class"), entry.get("type"), entry.get("version"))
        for entry in map(as_dict, as_list(answer))
    ]
    columns = ("alias", "class", "type", "version")
    return table(columns, rows) if rows else "no connector plugins"


def offsets_table(name: str, answer: Any) -> str:
    """`GET /connectors/{c}/offsets`: partitions and offsets as compact JSON."""
    rows = [
        (entry.get("partition"), entry.get("offset"))
        for entry in map(as_dict, as_list(as_dict(answer).get("offsets")))
    ]
    return table(("partition", "offset"), rows) if rows else f"connector {name} has no offsets"


def loggers_table(answer: Any) -> str:
    """`GET /admin/loggers`."""
    levels = as_dict(answer)
    rows = [
        (
            name,
            as_dict(levels[name]).get("level"),
            _epoch_ms(as_dict(levels[name]).get("last_modified")),
        )
        for name in sorted(levels)
    ]
    return table(("logger", "level", "last modified"), rows)


def describe_connector(info: Any, status: Any) -> str:
    """`GET /connectors/{c}` and `/status` together: state, config, tasks, traces."""
    about, state = as_dict(info), as_dict(status)
    connector = as_dict(state.get("connector"))
    header = [
        ("Name", about.get("name") or state.get("name")),
        ("Type", about.get("type") or state.get("type")),
        ("State", connector_state(state)),
        ("Worker", connector.get("worker_id")),
    ]
    parts = [fields(header)]
    if connector.get("trace"):
        parts.append("Trace:\n" + indent(clean(connector["trace"], multiline=True)))
    config = as_dict(about.get("config"))
    config_table = table(("key", "value"), sorted(config.items())) if config else "  (none)"
    parts.append("Config:\n" + indent(config_table))
    tasks = [as_dict(task) for task in as_list(state.get("tasks"))]
    if tasks:
        rows = [
            (t.get("id"), t.get("state"), t.get("worker_id"), t.get("started_at")) for t in tasks
        ]
        parts.append("Tasks:\n" + indent(table(("id", "state", "worker", "started"), rows)))
    else:
        parts.append("Tasks:\n  (none)")
    parts += [
        f"Task {clean(task.get('id'))} trace:\n" + indent(clean(task["trace"], multiline=True))
        for task in tasks
        if task.get("trace")
    ]
    return "\n".join(parts)


def describe_json(info: Any, status: Any) -> dict[str, Any]:
    """The same for scripts; `apply -f` takes it back (it reads `name` and `config`)."""
    about, state = as_dict(info), as_dict(status)
    return {
        "name": about.get("name", state.get("name")),
        "type": about.get("type", state.get("type")),
        "config": about.get("config"),
        "connector": state.get("connector"),
        "tasks": state.get("tasks"),
    }


def restart_outcome(name: str, plan: Any) -> str:
    """KIP-745's 202 answer: what the restart covers (shown `RESTARTING`)."""
    status = as_dict(plan)
    parts = []
    if as_dict(status.get("connector")).get("state") == "RESTARTING":
        parts.append("the connector")
    restarting = [
        clean(task.get("id"))
        for task in map(as_dict, as_list(status.get("tasks")))
        if task.get("state") == "RESTARTING"
    ]
    if restarting:
        parts.append(("task " if len(restarting) == 1 else "tasks ") + ", ".join(restarting))
    if not parts:
        return f"connector {name}: nothing to restart"
    return f"connector {name}: restarting {' and '.join(parts)}"


def loggers_changed(name: str, level: str, answer: Any) -> str:
    """`PUT /admin/loggers/{name}` on one worker: the loggers whose level changed."""
    changed = [clean(item) for item in as_list(answer)]
    if not changed:
        return f"logger {name}: already {level} on this worker"
    return f"logger {name} set to {level} on this worker; changed: {', '.join(changed)}"


def _milliseconds(value: Any) -> str:
    return f"{value} ms" if isinstance(value, int) and not isinstance(value, bool) else ""


def _epoch_ms(value: Any) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        return ""
    try:
        moment = datetime.fromtimestamp(value / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(value)
    return moment.isoformat(timespec="milliseconds")
