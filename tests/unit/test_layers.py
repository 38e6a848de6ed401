"""The one-way layer rule of docs/architecture.md, read from the source itself.

sparkherd -> rest -> herder -> worker -> protocol: a package may import the ones to its
right (skipping is fine), never one to its left, so no two packages import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("protocol", "worker", "herder", "rest", "sparkherd")
"""Bottom first: each may import only those before it."""


def imported_packages(source: Path) -> set[str]:
    tree = ast.parse(source.read_text(), filename=str(source))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name.split(".")[0] for name in names} & set(LAYERS)


def upward_imports() -> list[str]:
    found: list[str] = []
    for rank, package in enumerate(LAYERS):
        allowed = set(LAYERS[: rank + 1])
        for source in sorted((ROOT / package).rglob("*.py")):
            found.extend(
                f"{source.relative_to(ROOT)} imports {higher}"
                for higher in sorted(imported_packages(source) - allowed)
            )
    return found


def test_every_package_imports_only_the_layers_below_it() -> None:
    assert upward_imports() == []


def test_the_rule_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import rest.app\nfrom herder.herder import X\nfrom . import sibling\n")
    assert imported_packages(module) == {"rest", "herder"}


MAX_MODULE_LINES = 400
"""A module a newcomer can read in one sitting; past this, split it by concern."""


def oversized_modules(root: Path = ROOT) -> list[str]:
    return [
        f"{source.relative_to(root)} has {lines} lines"
        for package in LAYERS
        for source in sorted((root / package).rglob("*.py"))
        if (lines := len(source.read_text().splitlines())) > MAX_MODULE_LINES
    ]


def test_no_module_is_longer_than_the_bound() -> None:
    assert oversized_modules() == []


def test_the_bound_sees_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "herder").mkdir()
    (tmp_path / "herder" / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tmp_path / "herder" / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)

    assert oversized_modules(tmp_path) == [f"herder/long.py has {MAX_MODULE_LINES + 1} lines"]
