"""A new user's first steps from a fresh clone, as the README writes them: `make run`
installs the service and not the developer's tools, every `sparkherd` command shown runs
from the clone, and every link leads to a file of the repository."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


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


def test_every_sparkherd_command_in_the_readme_runs_from_a_fresh_clone() -> None:
    """`make run` installs the command in `.venv/bin`, which is on nobody's PATH: a block
    either calls it there or activates the venv before its first `sparkherd`."""
    unrunnable = []
    for block in shell_blocks(README.read_text(encoding="utf-8")):
        activated = False
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command in (". .venv/bin/activate", "source .venv/bin/activate"):
                activated = True
            elif command.startswith("sparkherd ") and not activated:
                unrunnable.append(line)
    assert not unrunnable


def test_the_readme_links_only_to_files_in_the_repository() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    local = [t for t in targets if "://" not in t and not t.startswith("mailto:")]
    assert local
    outside = [t for t in local if not (ROOT / t).resolve().is_relative_to(ROOT)]
    missing = [t for t in local if not (ROOT / t).exists()]
    assert (outside, missing) == ([], [])
