"""The slowest tests of a whole `make test`, from the JUnit XML files of its pytest runs.

    .venv/bin/python -m tests.support.slowest 25 .test-reports/*.xml

pytest's own `--durations` lists each run's slowest apart, and only when the run got to
its end; this reads what both runs wrote (pytest writes the file on a failed run too), so
the list says where the minutes went in a run that passed and in one that failed alike.
A test's time is its setup, call and teardown together, as JUnit counts it.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Timed:
    test: str
    seconds: float
    outcome: str


@dataclass(frozen=True)
class Run:
    report: Path
    tests: int
    failed: int
    seconds: float


OUTCOMES = ("failure", "error", "skipped")
"""The child of a <testcase> that says how it ended; none of them: it passed."""


def outcome(case: ElementTree.Element) -> str:
    ended = next((tag for tag in OUTCOMES if case.find(tag) is not None), "passed")
    return {"failure": "FAILED", "error": "ERROR", "skipped": "skipped"}.get(ended, ended)


def read_report(report: Path) -> tuple[Run, list[Timed]]:
    root = ElementTree.parse(report).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    timed = [
        Timed(
            f"{case.get('classname', '')}::{case.get('name', '')}",
            float(case.get("time", "0")),
            outcome(case),
        )
        for suite in suites
        for case in suite.iter("testcase")
    ]
    run = Run(
        report,
        tests=len(timed),
        failed=sum(t.outcome in ("FAILED", "ERROR") for t in timed),
        seconds=sum(float(suite.get("time", "0")) for suite in suites),
    )
    return run, timed


def slowest(timed: list[Timed], count: int) -> list[Timed]:
    return sorted(timed, key=lambda t: t.seconds, reverse=True)[:count]


def render(runs: list[Run], timed: list[Timed], count: int) -> str:
    lines = [
        f"{run.report.name}: {run.tests} tests, {run.failed} failed, {run.seconds:.0f} s wall"
        for run in runs
    ]
    lines.append(f"the {count} slowest tests of the whole run (setup + call + teardown):")
    lines += [f"{t.seconds:8.2f}s  {t.outcome:<7}  {t.test}" for t in slowest(timed, count)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("count", type=int)
    parser.add_argument("reports", nargs="*", type=Path)
    args = parser.parse_args(argv)
    runs: list[Run] = []
    timed: list[Timed] = []
    for report in args.reports:
        if not report.is_file():
            print(f"{report.name}: missing (the run stopped before pytest wrote it)")
            continue
        run, cases = read_report(report)
        runs.append(run)
        timed += cases
    print(render(runs, timed, args.count))


if __name__ == "__main__":
    main()
