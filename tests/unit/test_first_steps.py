"""A new user's first steps from a fresh clone, as the README and the manual in docs/ write
them: `make run` installs the service and not the developer's tools, every `sparkherd`
command shown runs from the clone, the README stays short, and its links (the first one
above all) lead to files of the repository."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))
README_MAX_LINES = 200


def planned_commands(target: str) -> list[str]:
    """What `make TARGET` would run from a fresh clone (`-B`: as if nothing were built)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    plan = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return plan.stdout.splitlines()


def installs(commands: list[str]) -> list[str]:
    return [line for line in commands if "pip install" in line]


def test_make_run_installs_the_service_without_the_dev_tools() -> None:
    commands = planned_commands("run")
    assert installs(commands), commands
    assert not any("[dev]" in line for line in installs(commands)), commands
    assert any("sparkherd up" in line for line in commands)


@pytest.mark.parametrize("target", ["test", "lint", "typecheck", "unit"])
def test_the_developer_targets_install_the_dev_tools(target: str) -> None:
    assert any("[dev]" in line for line in installs(planned_commands(target)))


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)


def unrunnable_commands(text: str) -> list[str]:
    """`make run` installs the command in `.venv/bin`, which is on nobody's PATH: a block
    either calls it there or activates the venv before its first `sparkherd`."""
    unrunnable = []
    for block in shell_blocks(text):
        activated = False
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command in (". .venv/bin/activate", "source .venv/bin/activate"):
                activated = True
            elif command.startswith("sparkherd ") and not activated:
                unrunnable.append(line)
    return unrunnable


def test_every_sparkherd_command_in_the_readme_and_the_manual_runs_from_a_fresh_clone() -> None:
    assert PAGES
    unrunnable = {
        path.relative_to(ROOT).as_posix(): unrunnable_commands(path.read_text(encoding="utf-8"))
        for path in [README, *PAGES]
    }
    assert {path: lines for path, lines in unrunnable.items() if lines} == {}


def readme_links() -> list[str]:
    return re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))


def test_the_readme_links_only_to_files_in_the_repository() -> None:
    local = [t for t in readme_links() if "://" not in t and not t.startswith("mailto:")]
    assert local
    outside = [t for t in local if not (ROOT / t).resolve().is_relative_to(ROOT)]
    missing = [t for t in local if not (ROOT / t).exists()]
    assert (outside, missing) == ([], [])


def test_the_readmes_first_link_points_inside_the_repository() -> None:
    """A newcomer follows the first link: it once led away from the project."""
    first = readme_links()[0]
    assert "://" not in first and (ROOT / first).exists(), first


def test_the_readme_stays_short() -> None:
    """The README says what sparkherd is, the two commands and a tour; the rest is in docs/
    (it had grown to 1,900 lines, a lab notebook of benchmark runs among them)."""
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, f"README.md has {lines} lines: move the details to docs/"
