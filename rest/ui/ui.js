// sparkherd /ui: the cluster as this worker sees it, refreshed every 2 s.
//
// Everything shown comes from the REST API (GET /workers, /health, /connectors?expand=...,
// /workers/progress) and the buttons call it; fetch sends the browser's credentials along
// (same origin), so the page works behind rest.auth. Every string from the server is set
// as text (textContent, dataset, title): connector names are user input, and none of
// them is ever parsed as HTML.
"use strict";

(() => {
  const REFRESH_MS = 2000;
  const STATES = ["RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING", "UNASSIGNED", "DESTROYED"];
  const UNASSIGNED = "";
  const OVERLOADED_MARK = "Overloaded:"; // how /health's message begins its overload line
  // The API's root: where /ui is served from, minus any user:password@ of the address
  // (fetch refuses URLs that carry credentials) and minus the /ui itself.
  const BASE = location.origin + location.pathname.replace(/\/ui\/?$/, "");

  const openDetails = new Set(); // which traces and configs the user has opened
  let timer = null;
  let latest = 0; // the newest refresh started; older answers are dropped
  let refreshes = 0;
  let rebalanceAt = null; // this browser's clock when the scheduled rebalance is due

  const byId = (id) => document.getElementById(id);

  // An element with text, attributes and children; never parses markup.
  function el(tag, options = {}, ...children) {
    const node = document.createElement(tag);
    if (options.cls) node.className = options.cls;
    if (options.text !== undefined) node.textContent = String(options.text);
    if (options.title) node.title = String(options.title);
    if (options.data) {
      for (const [key, value] of Object.entries(options.data)) node.dataset[key] = String(value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child); // strings become Text nodes
    }
    return node;
  }

  function stateClass(state) {
    const known = String(state || "unknown").toLowerCase();
    return /^[a-z]+$/.test(known) ? `state-${known}` : "state-unknown";
  }

  function badge(state, extra = "") {
    return el("span", { cls: `badge ${stateClass(state)} ${extra}`.trim(), text: state || "unknown" });
  }

  // A connector's state as `sparkherd ctl` words it (sparkherd/ctl/views.py connector_state):
  // Connect keeps a connector RUNNING while its tasks fail, so the count of failed tasks
  // goes with it, in amber unless the connector itself failed.
  function connectorState(status) {
    const said = status.connector.state;
    const failed = status.tasks.filter((task) => task.state === "FAILED").length;
    if (!failed) return { text: said, cls: stateClass(said) };
    const noun = status.tasks.length === 1 ? "task" : "tasks";
    const text = `${said || ""} (${failed} of ${status.tasks.length} ${noun} FAILED)`.trim();
    return { text, cls: said === "FAILED" ? stateClass(said) : "state-degraded" };
  }

  function connectorBadge(status, extra = "") {
    const { text, cls } = connectorState(status);
    return el("span", { cls: `badge ${cls} ${extra}`.trim(), text });
  }

  // One time format everywhere: UTC ISO 8601 to the millisecond, as statuses and logs
  // stamp theirs (Python's isoformat: +00:00 rather than Z).
  function utcIso(date) {
    return date.toISOString().replace(/Z$/, "+00:00");
  }

  function safeHref(url) {
    try {
      const parsed = new URL(url);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
    } catch {
      return null;
    }
  }

  // -- the API ----------------------------------------------------------------------------

  async function call(method, path) {
    const response = await fetch(BASE + path, {
      method,
      credentials: "same-origin",
      cache: "no-store",
      headers: { Accept: "application/json" },
    });
    return response;
  }

  async function failure(what, response) {
    let message = response.statusText;
    try {
      const body = await response.json();
      if (body && typeof body.message === "string") message = body.message;
    } catch {
      // not JSON: keep the status text
    }
    return new Error(`${what}: ${response.status} ${message}`);
  }

  async function getJson(path) {
    const response = await call("GET", path);
    if (!response.ok) throw await failure(`GET ${path}`, response);
    return response.json();
  }

  async function getHealth() {
    // 503 while starting and 500 when unhealthy still carry the body.
    const response = await call("GET", "/health");
    try {
      return await response.json();
    } catch {
      return { status: `HTTP ${response.status}`, message: response.statusText };
    }
  }

  async function getProgress() {
    // Every worker's tasks: the worker serving this page asks the others for theirs.
    const body = await getJson("/workers/progress");
    const rates = new Map();
    const errors = new Map(); // a task's error totals; absent: not counted yet, or by an older worker
    for (const task of body.tasks) {
      rates.set(taskKey(task.connector, task.task), task.input_rows_per_second);
      if (task.errors) errors.set(taskKey(task.connector, task.task), task.errors);
    }
    return { rates, errors, unanswered: body.unanswered || {} };
  }

  function taskKey(connector, task) {
    return JSON.stringify([connector, String(task)]);
  }

  // -- refreshing -------------------------------------------------------------------------

  async function refresh() {
    clearTimeout(timer);
    const mine = ++latest;
    try {
      const [cluster, health, connectors, rates] = await Promise.all([
        getJson("/workers"),
        getHealth(),
        getJson("/connectors?expand=status&expand=info"),
        getProgress().catch((error) => ({ rates: new Map(), errors: new Map(), failed: String(error.message || error) })),
      ]);
      if (mine !== latest) return;
      render(cluster, health, connectors, rates);
      showError(null);
      refreshes += 1;
      document.body.dataset.refreshes = String(refreshes);
      byId("refreshed").textContent = `updated ${utcIso(new Date())}`;
    } catch (error) {
      if (mine === latest) showError(`cannot refresh (showing the last answers): ${error.message || error}`);
    } finally {
      if (mine === latest && byId("auto").checked) timer = setTimeout(refresh, REFRESH_MS);
    }
  }

  function showError(message) {
    const box = byId("error");
    box.hidden = !message;
    box.textContent = message || "";
  }

  function showNotice(message) {
    const box = byId("notice");
    box.hidden = !message;
    box.textContent = message || "";
  }

  // -- rendering --------------------------------------------------------------------------

  function render(cluster, health, connectors, progress) {
    const names = Object.keys(connectors).sort();
    const self = cluster.workers.find((w) => w.state !== null && w.state !== undefined);
    renderHealth(health);
    renderFacts(cluster, self);
    renderWorkers(cluster, self, connectors);
    renderPlacement(cluster, names, connectors);
    renderConnectors(names, connectors, progress);
  }

  function renderHealth(health) {
    const node = byId("health");
    node.className = `badge health-${/^[a-z]+$/.test(health.status) ? health.status : "unknown"}`;
    node.textContent = health.status;
    node.title = health.message || "";
    // A worker that is not ready says why (warming up, joining, unhealthy); a ready one
    // speaks only of an overload: which tasks are behind their trigger.
    const message = health.message || "";
    const overload = message.indexOf(OVERLOADED_MARK);
    const shown = health.status !== "healthy" ? message : overload >= 0 ? message.slice(overload) : "";
    const line = byId("health-message");
    line.textContent = shown;
    line.classList.toggle("overloaded", health.status === "healthy" && overload >= 0);
  }

  function renderFacts(cluster, self) {
    byId("self").replaceChildren(
      self ? el("span", { text: self.id }) : "unknown",
      " ",
      self ? badge(self.state, "worker-state") : null,
    );
    byId("leader").textContent = cluster.leader || "none yet";
    byId("generation").textContent = String(cluster.generation);
    const protocol = cluster.protocol_version;
    byId("protocol").textContent = `${protocol} (${protocol === 0 ? "eager" : "cooperative"})`;
    rebalanceAt = cluster.scheduled_rebalance_ms > 0 ? Date.now() + cluster.scheduled_rebalance_ms : null;
    tick();
  }

  function tick() {
    const node = byId("countdown");
    if (rebalanceAt === null) {
      node.textContent = "none scheduled";
      node.className = "";
      return;
    }
    const left = Math.max(0, rebalanceAt - Date.now());
    node.textContent = `in ${(left / 1000).toFixed(1)} s`;
    node.className = "pending";
  }

  function isLeader(cluster, worker) {
    return cluster.leader !== null && cluster.leader.replace(/^https?:\/\//, "") === worker.id;
  }

  function renderWorkers(cluster, self, connectors) {
    const cards = cluster.workers.map((worker) => {
      const mine = self !== undefined && worker.id === self.id;
      const heading = el("h3", { cls: "worker-id", text: worker.id });
      const tags = el("div", { cls: "tags" });
      if (isLeader(cluster, worker)) tags.append(el("span", { cls: "badge leader", text: "leader" }));
      if (mine) {
        tags.append(el("span", { cls: "badge self", text: "this worker" }), badge(worker.state, "worker-state"));
      } else {
        const href = safeHref(`${worker.url}/ui`);
        const link = el("a", { cls: "muted", text: "state: see its /ui", title: "only a worker knows its own state" });
        if (href) link.href = href;
        tags.append(link);
      }
      const chips = el("div", { cls: "chips" });
      for (const task of worker.tasks) {
        const cut = task.lastIndexOf("-");
        const connector = task.slice(0, cut);
        const index = task.slice(cut + 1);
        const status = connectors[connector] && connectors[connector].status;
        const known = status && status.tasks.find((t) => String(t.id) === index);
        const state = known ? known.state : "UNASSIGNED";
        chips.append(el("span", { cls: `chip ${stateClass(state)}`, text: task, title: `${task}: ${state}` }));
      }
      const counts = el("p", {
        cls: "muted",
        text: `${worker.connectors.length} connector(s), ${worker.tasks.length} task(s) assigned`,
      });
      return el("article", { cls: "worker", data: { workerId: worker.id } }, heading, tags, counts, chips);
    });
    byId("workers").replaceChildren(...cards);
  }

  function renderPlacement(cluster, names, connectors) {
    const columns = cluster.workers.map((w) => w.id);
    let unassigned = false;
    for (const name of names) {
      for (const task of connectors[name].status.tasks) {
        if (task.worker_id === null) unassigned = true;
        else if (!columns.includes(task.worker_id)) columns.push(task.worker_id);
      }
    }
    if (unassigned) columns.push(UNASSIGNED);
    const head = el(
      "tr",
      {},
      el("th", { text: "connector" }),
      ...columns.map((id) => el("th", { text: id === UNASSIGNED ? "no worker" : id })),
    );
    const rows = names.map((name) => {
      const status = connectors[name].status;
      const cells = columns.map((id) => {
        const cell = el("td", { data: { worker: id } });
        for (const task of status.tasks) {
          if ((task.worker_id ?? UNASSIGNED) !== id) continue;
          cell.append(
            el(
              "span",
              {
                cls: `task ${stateClass(task.state)}`,
                title: `${name} task ${task.id}: ${task.state}`,
                data: { connector: name, task: task.id, worker: id, state: task.state },
              },
              el("span", { cls: "task-id", text: `#${task.id}` }),
              " ",
              el("span", { cls: "task-state", text: task.state }),
            ),
          );
        }
        return cell;
      });
      const label = el("th", { cls: "row-label" }, el("span", { text: name }), " ", connectorBadge(status));
      return el("tr", { data: { connector: name } }, label, ...cells);
    });
    byId("placement").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
    byId("legend").replaceChildren(...STATES.map((state) => badge(state)));
  }

  function details(key, summary, body) {
    const node = el("details", { data: { key } }, el("summary", { text: summary }), body);
    node.open = openDetails.has(key);
    node.addEventListener("toggle", () => {
      if (node.open) openDetails.add(key);
      else openDetails.delete(key);
    });
    return node;
  }

  // The line that says what went wrong: a Java trace starts with it; a Python one starts
  // with "Traceback (most recent call last):" and indented frames, then says it.
  function headline(text) {
    const lines = text.split("\n").map((line) => line.trimEnd());
    const said = lines.find((line) => line && !/^\s/.test(line) && !/^Traceback \(/.test(line));
    return said || lines[0] || "";
  }

  function trace(key, text) {
    const first = headline(text);
    return details(key, first.length > 160 ? `${first.slice(0, 160)}…` : first, el("pre", { cls: "trace", text }));
  }

  function button(label, title, onClick) {
    const node = el("button", { text: label, title, data: { action: label.toLowerCase() } });
    node.type = "button";
    node.addEventListener("click", onClick);
    return node;
  }

  async function act(node, what, method, path) {
    node.disabled = true;
    showNotice(`${what}…`);
    try {
      const response = await call(method, path);
      if (!response.ok) throw await failure(what, response);
      showNotice(`${what}: ${response.status} ${response.statusText || "OK"}`);
    } catch (error) {
      showNotice(null);
      showError(error.message || String(error));
    } finally {
      node.disabled = false;
      refresh();
    }
  }

  function actions(name) {
    const path = `/connectors/${encodeURIComponent(name)}`;
    return el(
      "div",
      { cls: "actions" },
      button("Pause", "PUT /connectors/{name}/pause", (e) => act(e.currentTarget, `pause ${name}`, "PUT", `${path}/pause`)),
      button("Resume", "PUT /connectors/{name}/resume", (e) => act(e.currentTarget, `resume ${name}`, "PUT", `${path}/resume`)),
      button("Restart", "POST /connectors/{name}/restart?includeTasks=true: the connector and all its tasks", (e) =>
        act(e.currentTarget, `restart ${name}`, "POST", `${path}/restart?includeTasks=true`),
      ),
      button("Delete", "DELETE /connectors/{name}", (e) => {
        if (window.confirm(`Delete connector ${name}? Its config and tasks are removed.`)) {
          act(e.currentTarget, `delete ${name}`, "DELETE", path);
        }
      }),
    );
  }

  // Why a task shows no rate: its worker did not answer, or Spark reported no batch yet.
  function noRate(progress, task) {
    if (progress.failed) return `progress unavailable: ${progress.failed}`;
    const why = task.worker_id && progress.unanswered[task.worker_id];
    if (why) return `${task.worker_id}: ${why}`;
    return task.state === "RUNNING" ? "no batch reported yet" : "not running";
  }

  // A task's error count: records that hit an error in the batches its checkpoint
  // committed, on every worker it ran on; where they went is in the tooltip.
  function errorCell(progress, name, task) {
    const key = taskKey(name, task.id);
    const counted = progress.errors.get(key);
    if (!counted) {
      const why = progress.rates.has(key) ? "not counted yet, or its worker does not count errors" : noRate(progress, task);
      return el("td", { cls: "errors", text: "–", title: why });
    }
    const failures = counted.deadletterqueue_produce_failures;
    const parts = [
      `${counted.record_errors} record error(s) in the committed batches`,
      `${counted.records_skipped} skipped`,
      `${counted.deadletterqueue_produce_requests} sent to the dead letter queue${failures ? ` (${failures} not taken)` : ""}`,
    ];
    if (counted.last_error_timestamp_ms) parts.push(`last at ${utcIso(new Date(counted.last_error_timestamp_ms))}`);
    const cls = counted.record_errors || failures ? "errors has-errors" : "errors";
    return el("td", { cls, text: counted.record_errors, title: parts.join("; ") });
  }

  function renderConnectors(names, connectors, progress) {
    const cards = names.map((name) => {
      const { status, info } = connectors[name];
      const heading = el(
        "header",
        {},
        el("h3", { cls: "connector-name", text: name }),
        connectorBadge(status, "connector-state"),
        el("span", { cls: "muted", text: `${status.type} · ${(info && info.config["connector.class"]) || ""}` }),
        el("span", { cls: "muted", text: status.connector.worker_id ? `on ${status.connector.worker_id}` : "no worker" }),
      );
      const parts = [heading, actions(name)];
      if (status.connector.trace) parts.push(trace(`connector:${name}`, status.connector.trace));
      const table = el(
        "table",
        { cls: "tasks" },
        el(
          "thead",
          {},
          el("tr", {}, ...["task", "state", "worker", "started", "rows/s", "errors", ""].map((h) => el("th", { text: h }))),
        ),
      );
      const body = el("tbody");
      for (const task of status.tasks) {
        const rate = progress.rates.get(taskKey(name, task.id));
        const restart = button("Restart task", `POST /connectors/{name}/tasks/${task.id}/restart`, (e) =>
          act(e.currentTarget, `restart ${name} task ${task.id}`, "POST", `/connectors/${encodeURIComponent(name)}/tasks/${task.id}/restart`),
        );
        body.append(
          el(
            "tr",
            { data: { connector: name, task: task.id } },
            el("td", { text: task.id }),
            el("td", {}, badge(task.state, "task-state")),
            el("td", { text: task.worker_id || "–" }),
            el("td", { cls: "muted", text: task.started_at || "–" }),
            el("td", {
              cls: "rate",
              text: rate === undefined || Number.isNaN(rate) ? "–" : rate.toFixed(1),
              title:
                rate === undefined
                  ? noRate(progress, task)
                  : "input rows per second of the newest trigger (0 while idle)",
            }),
            errorCell(progress, name, task),
            el("td", {}, restart),
          ),
        );
        if (task.trace) {
          const cell = el("td", {}, trace(`task:${name}:${task.id}`, task.trace));
          cell.colSpan = 6;
          body.append(el("tr", { cls: "trace-row" }, el("td"), cell));
        }
      }
      table.append(body);
      parts.push(table);
      if (info) {
        const config = el("dl", { cls: "config" });
        for (const key of Object.keys(info.config).sort()) {
          config.append(el("dt", { text: key }), el("dd", { text: info.config[key] }));
        }
        parts.push(details(`config:${name}`, "config", config));
      }
      return el("article", { cls: `connector ${connectorState(status).cls.replace("state-", "edge-")}`, data: { connector: name } }, ...parts);
    });
    byId("connectors").replaceChildren(...(cards.length ? cards : [el("p", { cls: "muted", text: "No connectors." })]));
  }

  // -- start ------------------------------------------------------------------------------

  byId("auto").addEventListener("change", (event) => {
    if (event.currentTarget.checked) refresh();
    else clearTimeout(timer);
  });
  setInterval(tick, 200);
  refresh();
})();
