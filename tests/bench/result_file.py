"""A bench run's result as one JSON file: what ran, with what, on what, and what it measured.

The benchmark pages cite a result file beside each figure, so a figure can be checked
against the run that printed it: the script and its argv, the settings it ran with, its
figures, the commit of the code measured and whether the tree held uncommitted changes
(a dirty tree measures code no commit has), the load average before and after (the
machine has two cores, shared), the cores, the Python, PySpark and Java versions and the
UTC time.

A script writes one only when asked (`--json PATH`, or `--json` alone for
`tests/bench/results/<script>-<UTC date-time>.json`): results are committed with the docs
that cite them, and `make test`'s quick benches must leave the tree as they found it.
A committed file is public: a `KEY=VALUE` in the argv or settings whose key is a secret's
(`*password`, `*sasl.jaas.config`) is written with its value hidden.
Files transcribed from a page's prose have the same shape, with `"recorded"` saying so and
null wherever the page gives nothing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from worker.plugins.api import HIDDEN, sounds_secret

RESULTS = Path(__file__).resolve().parent / "results"
REPOSITORY = RESULTS.parent.parent.parent
AUTO = "auto"
"""`--json` given without a path: the default file under RESULTS."""
MEASURED = "measured by the script"
REQUIRED_KEYS = (
    "script",
    "argv",
    "recorded",
    "settings",
    "figures",
    "commit",
    "dirty",
    "load_before",
    "load_after",
    "cores",
    "python",
    "pyspark",
    "java",
    "utc",
)
"""Every result file has these keys, measured or transcribed (a transcribed file holds null
where the page says nothing)."""


@dataclass(frozen=True)
class Machine:
    """What a run cannot change about its machine and code: read once, before it starts."""

    commit: str | None
    dirty: bool | None
    cores: int | None
    python: str
    pyspark: str | None
    java: str | None


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        nargs="?",
        const=AUTO,
        metavar="PATH",
        help="also write the run's result as JSON to PATH (alone: tests/bench/results/"
        "<script>-<UTC date-time>.json); nothing is written without it",
    )


def default_path(script: str, utc: datetime.datetime) -> Path:
    return RESULTS / f"{script}-{utc.strftime('%Y-%m-%dT%H%M%SZ')}.json"


def java_version(banner: str) -> str | None:
    """The version `java -version` names on its first line (`openjdk version "17.0.9" ...`)."""
    found = re.search(r'version "([^"]+)"', banner)
    return found.group(1) if found else None


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    """The parsed options a run took, defaults included, without the result file's own."""
    return {
        key: str(value) if isinstance(value, Path) else value
        for key, value in sorted(vars(args).items())
        if key != "json"
    }


def hidden(value: Any) -> Any:
    """`value` with the value of every secret's `KEY=VALUE` (or mapping entry) hidden."""
    if isinstance(value, str):
        ends = [i for i, c in enumerate(value) if c == "=" and sounds_secret(value[:i])]
        return value[: ends[0] + 1] + HIDDEN if ends else value
    if isinstance(value, Mapping):
        return {k: HIDDEN if sounds_secret(str(k)) else hidden(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [hidden(item) for item in value]
    return value


def result_document(
    script: str,
    argv: Sequence[str],
    settings: Mapping[str, Any],
    figures: Mapping[str, Any],
    machine: Machine,
    load_before: Sequence[float],
    load_after: Sequence[float],
    utc: datetime.datetime,
) -> dict[str, Any]:
    return {
        "script": script,
        "argv": hidden(list(argv)),
        "recorded": MEASURED,
        "settings": hidden(settings),
        "figures": dict(figures),
        "commit": machine.commit,
        "dirty": machine.dirty,
        "load_before": list(load_before),
        "load_after": list(load_after),
        "cores": machine.cores,
        "python": machine.python,
        "pyspark": machine.pyspark,
        "java": machine.java,
        "utc": utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def problems(document: object) -> list[str]:
    """What keeps a parsed file from being a result file; empty when it is one."""
    if not isinstance(document, dict):
        return ["not a JSON object"]
    found = [f"no key {key!r}" for key in REQUIRED_KEYS if key not in document]
    if "figures" in document and not isinstance(document["figures"], dict | list):
        found.append("'figures' is neither an object nor a list")
    if "recorded" in document and not isinstance(document["recorded"], str):
        found.append("'recorded' is not a string")
    return found


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(REPOSITORY), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None:
        return None
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return java_version(done.stderr + done.stdout)


def _pyspark() -> str | None:
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return None


def read_machine() -> Machine:
    head = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    return Machine(
        commit=head.strip() if head else None,
        dirty=bool(status.strip()) if status is not None else None,
        cores=os.cpu_count(),
        python=platform.python_version(),
        pyspark=_pyspark(),
        java=_java(),
    )


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


class ResultFile:
    """One run's record in the making: opened as the run starts, written as it ends.

    Without `--json` it reads nothing and writes nothing, so a script can always hold one.
    """

    def __init__(
        self, script_file: str, args: argparse.Namespace, argv: Sequence[str] | None = None
    ) -> None:
        self.script = Path(script_file).stem
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self.settings = settings_of(args)
        self.utc = datetime.datetime.now(datetime.UTC)
        asked: str | None = args.json
        self.path = None
        if asked is not None:
            self.path = default_path(self.script, self.utc) if asked == AUTO else Path(asked)
        self.machine = read_machine() if self.path else None
        self.load_before = load_average()

    def write(
        self, figures: Mapping[str, Any], settings: Mapping[str, Any] | None = None
    ) -> Path | None:
        """Write the file, when asked for; `settings` adds what the options imply."""
        if self.path is None or self.machine is None:
            return None
        document = result_document(
            self.script,
            self.argv,
            {**self.settings, **(settings or {})},
            figures,
            self.machine,
            self.load_before,
            load_average(),
            self.utc,
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(document, indent=2) + "\n")
        print(f"result written to {self.path}", flush=True)
        return self.path
