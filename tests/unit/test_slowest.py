"""`make test`'s list of the slowest tests, read from what pytest itself writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import slowest

TESTS = """
import time

def test_slow():
    time.sleep(0.3)

def test_fails():
    time.sleep(0.1)
    assert False

def test_quick():
    pass
"""


def junit_of(tmp_path: Path, name: str, source: str) -> Path:
    """A real pytest run's JUnit XML, as `make test` has pytest write it."""
    (tmp_path / f"test_{name}.py").write_text(source)
    report = tmp_path / f"{name}.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    subprocess.run(
        [*command, f"--junitxml={report}", f"test_{name}.py"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        timeout=120,
    )
    return report


def test_the_slowest_of_every_run_are_listed_slowest_first_failed_ones_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = junit_of(tmp_path, "first", TESTS)
    slowest.main(["2", str(first), str(tmp_path / "timed.xml")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "timed.xml: missing (the run stopped before pytest wrote it)"
    assert lines[1].startswith("first.xml: 3 tests, 1 failed, ")
    assert lines[2] == "the 2 slowest tests of the whole run (setup + call + teardown):"
    assert len(lines) == 5
    assert lines[3].split()[1:] == ["passed", "test_first::test_slow"]
    assert lines[4].split()[1:] == ["FAILED", "test_first::test_fails"]
    assert float(lines[3].split()[0].rstrip("s")) >= 0.3
