"""`/ui` in a real browser: headless Chromium renders each worker's page of a live
two-worker cluster behind basic auth, shows every worker, connector and task state the
REST API reports (a failed task with its trace, a connector whose name is markup shown as
text), the rates and error counts of both workers' tasks, its buttons pause and delete
connectors, and when a worker dies the leader's page counts the scheduled rebalance down.

The browser is Debian's `chromium` (`make chromium`), driven over the DevTools protocol
through a pipe (`tests/support/browser.py`); it answers the authentication prompt with the
test's credentials, as a person would, and the page's own calls reuse them. A screenshot
of the page is kept in `build/test-artifacts/`, and its path printed.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from sparkherd.ctl.views import connector_state
from tests.support.browser import CHROMIUM, Chromium, DevToolsError, Page, chromium
from tests.support.cluster import generator_config, worker_pair
from tests.support.polling import wait_until
from tests.support.processes import WorkerProcess, free_port
from tests.support.rest_client import Api

pytestmark = pytest.mark.integration

TIMEOUT_S = 120
ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
"""Where the screenshots are kept (ignored by git): pytest's own temporary directories
are removed by later runs, even by another checkout's."""
USER, PASSWORD = "admin", "s3cret"
ADMIN = httpx.BasicAuth(USER, PASSWORD)
NO_RATE = "\u2013"
"""What the page shows for a rate it does not know (an en dash)."""
UTC_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")
"""The one time format of statuses, logs, `ctl` and the page."""
SHADY = "<img src=x onerror=\"document.title='owned'\"> & co"
"""A legal connector name that is also markup: the page must show it as text."""

REFRESHES = "Number(document.body?.dataset.refreshes ?? 0)"
"""How often the page has refreshed itself; 0 while it loads."""
READ_PAGE = """(() => {
  if (!document.getElementById("workers")) return {refreshes: 0};
  const text = (node) => (node ? node.textContent.trim() : null);
  const heads = [...document.querySelectorAll("#placement thead th")].map(text);
  return {
    refreshes: Number(document.body.dataset.refreshes),
    error: text(document.getElementById("error")),
    notice: text(document.getElementById("notice")),
    title: document.title,
    images: document.images.length,
    leader: text(document.getElementById("leader")),
    generation: text(document.getElementById("generation")),
    countdown: text(document.getElementById("countdown")),
    refreshed: text(document.getElementById("refreshed")),
    degraded: [...document.querySelectorAll("#connectors .state-degraded.connector-state")]
      .map(text),
    started: [...document.querySelectorAll("#connectors tr[data-task] td:nth-child(4)")].map(text),
    workers: [...document.querySelectorAll("#workers .worker")].map((card) => ({
      id: text(card.querySelector(".worker-id")),
      leader: card.querySelector(".badge.leader") !== null,
      self: card.querySelector(".badge.self") !== null,
      state: text(card.querySelector(".worker-state")),
    })),
    connectors: Object.fromEntries(
      [...document.querySelectorAll("#connectors .connector")].map((card) => [
        text(card.querySelector(".connector-name")),
        text(card.querySelector(".connector-state")),
      ]),
    ),
    placed: [...document.querySelectorAll("#placement .task")].map((chip) => [
      text(chip.closest("tr").querySelector(".row-label > span")),
      Number(text(chip.querySelector(".task-id")).slice(1)),
      heads[chip.closest("td").cellIndex],
      text(chip.querySelector(".task-state")),
    ]),
    tasks: [...document.querySelectorAll("#connectors tr[data-task]")].map((row) => [
      text(row.closest(".connector").querySelector(".connector-name")),
      Number(text(row.cells[0])),
      text(row.querySelector(".task-state")),
      text(row.querySelector(".rate")),
      text(row.querySelector(".errors")),
    ]),
    traces: [...document.querySelectorAll("details[data-key^='task:']")].map((node) => ({
      summary: text(node.querySelector("summary")),
      open: node.open,
    })),
  };
})()"""


class AdminApi(Api):
    """The REST client with the cluster's credentials."""

    def call(self, method: str, path: str, expect: int, **kwargs: Any) -> httpx.Response:
        return super().call(method, path, expect, auth=ADMIN, **kwargs)


def worker_id(worker: WorkerProcess) -> str:
    return worker.url.removeprefix("http://")


def connector_button(name: str, action: str) -> str:
    """JavaScript finding the button of the connector card whose visible name is `name`."""
    return (
        '[...document.querySelectorAll("#connectors .connector")]'
        f'.find((card) => card.querySelector(".connector-name").textContent === {json.dumps(name)})'
        f"?.querySelector({json.dumps(f'button[data-action={action!r}]')})"
    )


def differences(page: dict[str, Any], workers: dict[str, Any], me: str, expanded: Any) -> list[str]:
    """What the page shows that the REST API does not say (both read just now)."""
    found: list[str] = []

    def expect(what: str, shown: object, said: object) -> None:
        if shown != said:
            found.append(f"{what}: page {shown!r}, REST {said!r}")

    expect("error", page["error"], "")
    expect("workers", [w["id"] for w in page["workers"]], [w["id"] for w in workers["workers"]])
    expect("this worker", [w["id"] for w in page["workers"] if w["self"]], [me])
    own = next(w["state"] for w in workers["workers"] if w["id"] == me)
    expect("own state", [w["state"] for w in page["workers"] if w["self"]], [own])
    leader = workers["leader"].removeprefix("http://")
    expect("leader", [w["id"] for w in page["workers"] if w["leader"]], [leader])
    expect("generation", page["generation"], str(workers["generation"]))
    statuses = {name: body["status"] for name, body in expanded.items()}
    expect(
        "connectors",
        page["connectors"],
        {name: connector_state(status) for name, status in statuses.items()},
    )
    said = [
        (name, task["id"], task["worker_id"] or "no worker", task["state"])
        for name, status in statuses.items()
        for task in status["tasks"]
    ]
    expect("placement", sorted(map(tuple, page["placed"])), sorted(said))
    expect(
        "task rows",
        sorted((c, t, s) for c, t, s, _, _ in page["tasks"]),
        sorted((c, t, s) for c, t, _, s in said),
    )
    traces = [
        task["trace"]
        for status in statuses.values()
        for task in status["tasks"]
        if task["state"] == "FAILED" and task["trace"]
    ]
    shown = [t["summary"].removesuffix("…") for t in page["traces"]]
    expect("traces shown", len(shown), len(traces))
    for summary in shown:
        if not summary or not any(summary in trace for trace in traces):
            found.append(f"trace summary {summary!r} is from no trace of a failed task")
    return found


def look(page: Page, worker: WorkerProcess) -> dict[str, Any]:
    """The page after at least one refresh, beside what the REST API says."""
    shown: dict[str, Any] = page.evaluate(READ_PAGE)
    if not shown["refreshes"]:
        return {"differences": ["the page has not refreshed yet"], "page": shown}
    workers = httpx.get(f"{worker.url}/workers", auth=ADMIN, timeout=10).json()
    expanded = httpx.get(f"{worker.url}/connectors?expand=status", auth=ADMIN, timeout=10).json()
    found = differences(shown, workers, worker_id(worker), expanded)
    return {"differences": found, "page": shown}


def wait_agreed(page: Page, worker: WorkerProcess, what: str) -> dict[str, Any]:
    seen: dict[str, Any] = wait_until(
        partial(look, page, worker),
        TIMEOUT_S,
        what=f"the page of {worker.name} to show {what}",
        until=lambda seen: not seen["differences"],
    )
    page_seen: dict[str, Any] = seen["page"]
    return page_seen


def seconds(countdown: str) -> float:
    """The seconds of the page's countdown, `in 12.3 s`."""
    return float(countdown.removeprefix("in ").removesuffix(" s"))


def refreshed_since(page: Page, count: int) -> int | None:
    now = int(page.evaluate(REFRESHES))
    return now if now > count else None


@pytest.fixture
def cluster(
    broker: EmbeddedBroker, tmp_path: Path
) -> Iterator[tuple[WorkerProcess, WorkerProcess, AdminApi]]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"no `{CHROMIUM}` on PATH: `make chromium` installs Debian's")
    settings = [
        f"group.id=ui-{free_port()}",
        "rest.auth=basic",
        f"rest.auth.credentials={USER}:{PASSWORD}",
    ]
    with worker_pair(broker, tmp_path, settings, ADMIN) as (first, second, leader_url, follower):
        api = AdminApi(leader_url, TIMEOUT_S)
        blocked = tmp_path / "blocked"
        blocked.write_text("a file where the task's output directory should be")
        connectors: list[dict[str, Any]] = [
            {"name": "gen", "config": generator_config(tmp_path / "gen", tasks=2)},
            {"name": "broken", "config": generator_config(blocked, tasks=1)},
            {
                "name": SHADY,
                "config": generator_config(tmp_path / "shady", tasks=1),
                "initial_state": "PAUSED",
            },
        ]
        for body in connectors:
            api.call("POST", "/connectors", 201, json=body)
        api.wait_states("gen", "RUNNING", ["RUNNING", "RUNNING"])
        api.wait_states("broken", "RUNNING", ["FAILED"])
        api.wait_states(SHADY, "PAUSED", ["PAUSED"])
        yield (first if leader_url == first.url else second), follower, api


def test_the_page_shows_the_cluster_and_its_buttons_work(
    cluster: tuple[WorkerProcess, WorkerProcess, AdminApi], tmp_path: Path
) -> None:
    leader, follower, api = cluster
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert httpx.get(f"{leader.url}/ui", timeout=10).status_code == 401, "/ui needs credentials"
    with chromium(tmp_path, (USER, PASSWORD)) as browser:
        page = browser.open(f"{leader.url}/ui")
        try:
            drive(browser, page, leader, follower, api, ARTIFACTS)
        except BaseException:
            with contextlib.suppress(DevToolsError, OSError):
                failed = page.screenshot(ARTIFACTS / "test_ui-failure.png")
                print(f"screenshot of the failure: {failed}")
            raise


def drive(
    browser: Chromium,
    page: Page,
    leader: WorkerProcess,
    follower: WorkerProcess,
    api: AdminApi,
    artifacts: Path,
) -> None:
    shown = wait_agreed(page, leader, "every worker, connector and task state")
    assert SHADY in shown["connectors"], "a name that is markup must show as its text"
    assert shown["title"] == "sparkherd" and shown["images"] == 0, "the name ran as markup"
    assert shown["countdown"] == "none scheduled"

    # Rows/s and error counts of every worker's tasks: the page's worker asks the other
    # for its own.
    gen_tasks = {t["id"]: t["worker_id"] for t in api.status("gen")["tasks"]}
    assert set(gen_tasks.values()) == {worker_id(leader), worker_id(follower)}, gen_tasks

    def figures() -> dict[int, tuple[str, str]]:
        rows = page.evaluate(READ_PAGE)["tasks"]
        return {task: (rate, errors) for name, task, _, rate, errors in rows if name == "gen"}

    seen = wait_until(
        figures,
        TIMEOUT_S,
        what="rows/s and errors of the tasks of both workers",
        until=lambda shown: (
            set(shown) == set(gen_tasks) and all(NO_RATE not in pair for pair in shown.values())
        ),
    )
    assert all(float(rate) >= 0 for rate, _ in seen.values()), seen
    assert {errors for _, errors in seen.values()} == {"0"}, "the generator makes no bad record"

    # A connector RUNNING with a FAILED task says so, in amber, as ctl words it; every
    # time shown is UTC ISO 8601.
    shown = wait_until(
        lambda: page.evaluate(READ_PAGE),
        TIMEOUT_S,
        what="broken shown RUNNING with its failed task",
        until=lambda seen: seen["degraded"] == ["RUNNING (1 of 1 task FAILED)"],
    )
    assert shown["connectors"]["broken"] == "RUNNING (1 of 1 task FAILED)"
    assert shown["connectors"]["gen"] == "RUNNING"
    assert UTC_ISO.fullmatch(shown["refreshed"].removeprefix("updated ")), shown["refreshed"]
    started = [time for time in shown["started"] if time != NO_RATE]
    assert started and all(UTC_ISO.fullmatch(time) for time in started), shown["started"]

    # A failed task's trace opens with a click and stays open across refreshes (each one
    # rebuilds the page). A worker may restart the task meanwhile, hiding it for a moment.
    summary = "document.querySelector(\"details[data-key^='task:'] summary\")"
    wait_until(partial(page.evaluate, summary + " !== null"), TIMEOUT_S, what="a trace")
    headline = page.evaluate(summary + ".textContent")
    assert headline.startswith("org.apache.hadoop.fs.ParentNotDirectoryException: "), headline
    page.click(summary)
    count = int(page.evaluate(REFRESHES))
    wait_until(partial(refreshed_since, page, count + 1), 30, what="two more refreshes")
    wait_until(
        lambda: page.evaluate(READ_PAGE)["traces"],
        TIMEOUT_S,
        what="the trace to stay open",
        until=lambda traces: [t["open"] for t in traces] == [True],
    )

    page.click(connector_button("gen", "pause"))
    api.wait_states("gen", "PAUSED", ["PAUSED", "PAUSED"])
    shown = wait_agreed(page, leader, "gen PAUSED")
    assert shown["connectors"]["gen"] == "PAUSED"
    assert shown["notice"].startswith("pause gen: 202"), shown["notice"]
    screenshot = page.screenshot(artifacts / "test_ui.png")
    print(f"screenshot of /ui: {screenshot}")

    # The follower's page shows its own state, and deletes through the leader.
    page.navigate(f"{follower.url}/ui")
    wait_agreed(page, follower, "its own state")
    page.click(connector_button(SHADY, "delete"))
    wait_until(
        lambda: api.call("GET", "/connectors", 200).json(),
        TIMEOUT_S,
        what=f"{SHADY} deleted",
        until=lambda names: SHADY not in names,
    )
    shown = wait_agreed(page, follower, f"{SHADY} gone")
    assert SHADY not in shown["connectors"]
    assert browser.seen.dialogs == [f"Delete connector {SHADY}? Its config and tasks are removed."]

    # A worker that dies leaves its tasks waiting for it: the leader's page counts the
    # delay down.
    page.navigate(f"{leader.url}/ui")
    follower.kill()

    def countdown() -> tuple[str, int]:
        said = httpx.get(f"{leader.url}/workers", auth=ADMIN, timeout=10).json()
        return page.evaluate(READ_PAGE)["countdown"], said["scheduled_rebalance_ms"]

    shown_at, said_ms = wait_until(
        countdown,
        TIMEOUT_S,
        what="a scheduled rebalance on the page",
        until=lambda seen: seen[0].startswith("in ") and seen[1] > 0,
    )
    assert abs(seconds(shown_at) - said_ms / 1000) < 10, (shown_at, said_ms)
    wait_until(
        lambda: seconds(page.evaluate(READ_PAGE)["countdown"]),
        10,
        what="the countdown to go down",
        until=lambda left: left < seconds(shown_at),
    )

    assert browser.seen.exceptions == [], browser.seen.exceptions
    challenged = sorted({url.split("/")[2] for url in browser.seen.auth_challenges})
    assert challenged == sorted(map(worker_id, (leader, follower)))
    assert len(browser.seen.auth_challenges) == 2, (
        f"the page's own calls should reuse the credentials: {browser.seen.auth_challenges}"
    )
