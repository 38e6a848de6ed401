"""Headless Chromium for tests, driven over the DevTools protocol through a pipe.

`--remote-debugging-pipe` makes Chromium read protocol commands from its fd 3 and write
answers and events to its fd 4, as JSON messages each ended by a NUL byte: no debugging
port to pick, no websocket client, nothing beyond Debian's `chromium` package. A reader
thread files each answer under its command's id and handles the events that must be
answered at once: HTTP authentication challenges (with the test's credentials, as a
person typing them into the browser's prompt), paused requests (let through) and
`confirm()` dialogs (accepted). It also keeps every uncaught exception of the page.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "chromium"
"""Debian's package; `make chromium` installs it."""
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
CALL_TIMEOUT_S = 30.0

Message = dict[str, Any]


class DevToolsError(RuntimeError):
    """A command the browser refused, or a script that threw."""


@dataclass
class Seen:
    """What the browser reported on its own, for a test's assertions and failures."""

    auth_challenges: list[str] = field(default_factory=list)
    """The URL of each request answered 401 for which the browser asked for credentials."""
    dialogs: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    """Uncaught exceptions of the page's scripts, as the console would show them."""


class Chromium:
    """One headless Chromium with a profile of its own; always `close()` it."""

    def __init__(
        self,
        profile: Path,
        log: Path,
        credentials: tuple[str, str] | None = None,
        window: tuple[int, int] = (1280, 1000),
    ) -> None:
        self._profile = profile
        self._log = log
        self._credentials = credentials
        self._window = window
        self._ids = itertools.count(1)
        self._answers: dict[int, queue.Queue[Message]] = {}
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._to_browser = -1
        self._from_browser = -1
        self._reader: threading.Thread | None = None
        self.seen = Seen()

    def start(self) -> Chromium:
        executable = shutil.which(CHROMIUM)
        if executable is None:
            raise RuntimeError("no `chromium` on PATH: `make chromium` installs Debian's")
        self._profile.mkdir(parents=True, exist_ok=True)
        commands_read, self._to_browser = os.pipe()
        self._from_browser, events_write = os.pipe()
        width, height = self._window
        command = [
            executable,
            *FLAGS,
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        # bash puts the two pipe ends where Chromium looks for them (fd 3 and 4); dash,
        # Debian's sh, takes no file descriptor above 9 in a redirection.
        wrapper = f'exec "$@" 3<&{commands_read} 4>&{events_write}'
        with open(self._log, "ab") as log:
            self._process = subprocess.Popen(
                ["bash", "-c", wrapper, "bash", *command],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(commands_read, events_write),
                start_new_session=True,
            )
        os.close(commands_read)
        os.close(events_write)
        self._reader = threading.Thread(target=self._read, name="devtools-reader", daemon=True)
        self._reader.start()
        return self

    def close(self) -> None:
        """Kill the browser and every process it started, then release the pipes."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._reader is not None:
            self._reader.join(5)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout_s: float = CALL_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Send one command and wait for its answer's `result`."""
        answer: queue.Queue[Message] = queue.Queue(maxsize=1)
        with self._lock:
            number = next(self._ids)
            self._answers[number] = answer
        self._send(number, method, params, session)
        try:
            message = answer.get(timeout=timeout_s)
        except queue.Empty:
            raise DevToolsError(f"{method}: no answer in {timeout_s:g} s") from None
        finally:
            with self._lock:
                self._answers.pop(number, None)
        if "error" in message:
            raise DevToolsError(f"{method}: {message['error']}")
        result: dict[str, Any] = message.get("result", {})
        return result

    def open(self, url: str) -> Page:
        """A new tab, attached, with the events the reader answers switched on, at `url`."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(self, session)
        for domain in ("Page.enable", "Runtime.enable"):
            self.call(domain, session=session)
        if self._credentials is not None:
            self.call("Fetch.enable", {"handleAuthRequests": True}, session=session)
        page.navigate(url)
        return page

    # -- the pipe ---------------------------------------------------------------------------

    def _send(
        self, number: int, method: str, params: dict[str, Any] | None, session: str | None
    ) -> None:
        message: Message = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        with self._lock:
            os.write(self._to_browser, data)

    def _notify(self, method: str, params: dict[str, Any], session: str | None) -> None:
        """A command sent from the reader thread, whose answer nobody waits for."""
        with self._lock:
            number = next(self._ids)
        with contextlib.suppress(OSError):
            self._send(number, method, params, session)

    def _read(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            pending += chunk
            *messages, pending = pending.split(b"\0")
            for raw in messages:
                self._dispatch(json.loads(raw))

    def _dispatch(self, message: Message) -> None:
        if "id" in message:
            with self._lock:
                waiting = self._answers.get(message["id"])
            if waiting is not None:
                waiting.put(message)
            return
        method, params = message.get("method", ""), message.get("params", {})
        session = message.get("sessionId")
        if method == "Fetch.authRequired":
            self.seen.auth_challenges.append(params["request"]["url"])
            if self._credentials is None:
                response = {"response": "CancelAuth"}
            else:
                user, password = self._credentials
                response = {"response": "ProvideCredentials", "username": user}
                response["password"] = password
            self._notify(
                "Fetch.continueWithAuth",
                {"requestId": params["requestId"], "authChallengeResponse": response},
                session,
            )
        elif method == "Fetch.requestPaused":
            self._notify("Fetch.continueRequest", {"requestId": params["requestId"]}, session)
        elif method == "Page.javascriptDialogOpening":
            self.seen.dialogs.append(params.get("message", ""))
            self._notify("Page.handleJavaScriptDialog", {"accept": True}, session)
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            described = details.get("exception", {}).get("description") or details.get("text")
            self.seen.exceptions.append(str(described))


@dataclass
class Page:
    """One attached tab."""

    browser: Chromium
    session: str

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.call(method, params, session=self.session)

    def navigate(self, url: str) -> None:
        answer = self.call("Page.navigate", {"url": url})
        if answer.get("errorText"):
            raise DevToolsError(f"navigating to {url}: {answer['errorText']}")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited if it is a promise), as JSON."""
        answer = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            described = details.get("exception", {}).get("description") or details.get("text")
            raise DevToolsError(f"script failed: {described}")
        return answer["result"].get("value")

    def click(self, element: str) -> None:
        """Press and release the mouse over the element that the JavaScript expression
        `element` finds, as a person would (the page sees trusted events)."""
        where = self.evaluate(
            f"""(() => {{
                const node = {element};
                if (!node) return null;
                node.scrollIntoView({{block: "center"}});
                const box = node.getBoundingClientRect();
                return {{x: box.x + box.width / 2, y: box.y + box.height / 2}};
            }})()"""
        )
        if where is None:
            raise DevToolsError(f"nothing to click: {element}")
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": where["x"], "y": where["y"], "button": "left", "clickCount": 1},
            )

    def screenshot(self, path: Path) -> Path:
        """The whole page, not only the window, as a PNG."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.call(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": clip},
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@contextlib.contextmanager
def chromium(root: Path, credentials: tuple[str, str] | None = None) -> Iterator[Chromium]:
    """A started browser whose profile and log live under `root`, killed on the way out."""
    browser = Chromium(root / "chromium-profile", root / "chromium.log", credentials)
    try:
        yield browser.start()
    finally:
        browser.close()
