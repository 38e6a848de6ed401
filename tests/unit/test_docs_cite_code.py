"""The pages that explain the code name only code that exists.

docs/architecture.md and docs/getting-started.md send a newcomer to files, modules,
classes and functions by name; a rename that leaves them behind sends the reader nowhere.
Every code-shaped name between backticks on those pages is looked up in the source itself
(by its syntax tree: nothing is imported): a path must exist, a dotted name must resolve
through modules, classes and their members, a CamelCase name must be defined somewhere.
Config keys, states, commands and placeholders are not code-shaped and pass unread.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("docs/architecture.md", "docs/getting-started.md")
PACKAGES = ("protocol", "worker", "herder", "rest", "sparkherd", "tests")
TOP_DIRS = (*PACKAGES, "deploy", "docs", ".ci")

CITED = re.compile(r"`([^`\s]+)`")
CAMEL = re.compile(r"^[A-Z][a-z0-9]+[A-Z]\w*$")
SNAKE_CALL = re.compile(r"^[a-z]\w*_\w*\(.*\)$")
NOT_OURS = {
    "FileStreamSink": "Spark's own file sink, whose log and layout ours share",
    "_state.py": "h11's state machine, the model of the member's",
}

DOTTED = re.compile(r"^_?[A-Za-z]\w*(\.[A-Za-z_]\w*)+$")


class Source:
    """What the source defines: each module's names, each class's members, by name."""

    def __init__(self, root: Path) -> None:
        self.modules: dict[str, set[str]] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self.stems: dict[str, list[str]] = defaultdict(list)
        self.files: set[str] = set()
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                module = ".".join(path.relative_to(root).with_suffix("").parts)
                self.modules[module] = self._read(ast.parse(path.read_text()))
                self.stems[path.stem].append(module)
                self.files.add(path.relative_to(root).as_posix())
        self.defined = set().union(*self.modules.values())

    def _read(self, tree: ast.Module) -> set[str]:
        names: set[str] = set()
        for node in tree.body:
            names |= _bound(node)
            if isinstance(node, ast.ClassDef):
                for inner in ast.walk(node):
                    self.members[node.name] |= _bound(inner) | _self_attributes(inner)
        return names

    def resolves(self, dotted: str) -> bool:
        """`a.b.C.m` where `a.b` is a module, or `stem.C.m` for a module's file name, or
        `C.m` for a class defined anywhere, or `file.py` (`jdbc/sql.py`) for the end of a
        module's path."""
        if dotted.endswith(".py"):
            return any(f"/{file}".endswith(f"/{dotted}") for file in self.files)
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in self.modules:
                return self._within(self.modules[module], parts[cut:])
        if parts[0] in self.stems:
            return any(self._within(self.modules[m], parts[1:]) for m in self.stems[parts[0]])
        return self._within(self.defined, parts)

    def _within(self, names: set[str], rest: list[str]) -> bool:
        if not rest:
            return True
        if rest[0] not in names:
            return False
        return all(part in self.members[owner] for owner, part in itertools.pairwise(rest))


def _bound(node: ast.AST) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _self_attributes(node: ast.AST) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else []
    if isinstance(node, ast.AnnAssign):
        targets = [node.target]
    return {
        t.attr
        for t in targets
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }


def code_shaped(name: str, source: Source) -> bool:
    """A class (`LocalWork`), a call (`apply_assignment()`), or a dotted name that starts at
    a package (`herder.work.STARTS_AT_ONCE`), a class (`GroupLoop.leave_for_good`) or a
    module's file name with an underscore (`task_claims.runs_stopped`); `errors.tolerance`
    and `security.protocol` are config keys, not code, though modules of those names exist."""
    first = name.split(".")[0]
    if name.endswith(".py"):
        return True
    if CAMEL.match(first) or SNAKE_CALL.match(name):
        return True
    if not DOTTED.match(name):
        return False
    return first in PACKAGES or ("_" in first.strip("_") and first in source.stems)


def path_missing(cited: str, source: Source, root: Path) -> bool:
    """`herder/work.py`, `herder/` or `worker/kafka/spark_io.publish_once` (a module's name)."""
    if (root / cited).exists():
        return False
    folder, _, tail = cited.rpartition("/")
    stem, _, attribute = tail.partition(".")
    attribute = "" if attribute == "py" else attribute.removeprefix("py.")
    if not attribute or not (root / folder / f"{stem}.py").exists():
        return True
    return not source.resolves(f"{folder.replace('/', '.')}.{stem}.{attribute}")


def missing_citations(page: str, source: Source, root: Path = ROOT) -> list[str]:
    missing: list[str] = []
    for cited in CITED.findall((root / page).read_text()):
        name = re.sub(r"\(.*\)$", "", cited)
        if "/" in cited and cited.split("/")[0] in TOP_DIRS:
            if path_missing(cited, source, root):
                missing.append(cited)
        elif code_shaped(cited, source) and cited not in NOT_OURS and not source.resolves(name):
            missing.append(cited)
    return missing


def test_every_code_name_the_pages_cite_exists() -> None:
    source = Source(ROOT)
    assert {page: missing_citations(page, source) for page in PAGES} == {page: [] for page in PAGES}


def test_the_check_sees_names_that_are_gone(tmp_path: Path) -> None:
    (tmp_path / "herder").mkdir()
    (tmp_path / "herder" / "work.py").write_text(
        "class LocalWork:\n    def start(self):\n        self.owned = 1\nLIMIT = 4\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "`herder/work.py` `herder/gone.py` `LocalWork.start` `LocalWork.owned` `LocalWork.stop`"
        " `herder.work.LIMIT` `herder.work.GONE` `work.LocalWork` `GoneClass` `start_up()`"
        " `tasks.max` `RUNNING` `sparkherd up` `herder/work.py.LocalWork`\n"
    )
    assert missing_citations("docs/page.md", Source(tmp_path), tmp_path) == [
        "herder/gone.py",
        "LocalWork.stop",
        "herder.work.GONE",
        "GoneClass",
        "start_up()",
    ]
