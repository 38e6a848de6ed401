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


def imports(source: Path) -> list[tuple[str, list[str]]]:
    """Each absolute import of `source` as (module, the names taken from it): `import a.b`
    is ("a.b", []), `from a.b import c` is ("a.b", ["c"])."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(source.read_text(), filename=str(source))):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def imported_packages(source: Path) -> set[str]:
    return {module.split(".")[0] for module, _ in imports(source)} & set(LAYERS)


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


SEAM_TYPES = {
    "worker.runtime.task_state": "task states, and what a FAILED task's trace says",
    "worker.runtime.task_offsets": "a task's committed offsets as values",
    "worker.kafka.security": "how the herder's own Kafka clients connect",
    "worker.config.bounds": "how large a stored connector config may be",
    "worker.plugins.auto_restart_settings": "a connector's own auto.restart.* keys",
}
"""All that herder/ may import from worker/: types, no I/O. What the herder needs done by
the worker goes through the seams of herder/runtime.py, which the process wires."""


def worker_modules(source: Path) -> set[str]:
    """The worker modules `source` imports: `from a.b import c` imports `a.b`, or `a.b.c`
    where that is a module of its own."""
    names = {
        f"{module}.{name}" if f"{module}.{name}" in SEAM_TYPES else module
        for module, taken in imports(source)
        for name in taken or [""]
    }
    return {name for name in names if name.split(".")[0] == "worker"}


def herder_reaches_into_worker(root: Path = ROOT) -> list[str]:
    return [
        f"{source.relative_to(root)} imports {module}"
        for source in sorted((root / "herder").rglob("*.py"))
        for module in sorted(worker_modules(source) - SEAM_TYPES.keys())
    ]


def test_the_herder_imports_only_the_seam_types_from_the_worker() -> None:
    assert herder_reaches_into_worker() == []


def test_the_seam_rule_sees_a_herder_module_reach_into_the_worker(tmp_path: Path) -> None:
    (tmp_path / "herder").mkdir()
    (tmp_path / "herder" / "reach.py").write_text(
        "from worker.runtime.task_state import TaskState\n"
        "from worker.runtime import task_offsets\n"
        "from worker.runtime.checkpoint_layout import checkpoint_dir_for\n"
        "import worker.runtime.spark_task_runtime\n"
    )
    assert herder_reaches_into_worker(tmp_path) == [
        "herder/reach.py imports worker.runtime.checkpoint_layout",
        "herder/reach.py imports worker.runtime.spark_task_runtime",
    ]


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


REST_SEAM = "rest/worker_seam.py"
"""The one module of rest/ that imports worker/: the REST layer's whole view of the worker."""


def rest_reaches_into_worker(root: Path = ROOT) -> list[str]:
    return [
        f"{source.relative_to(root)} imports worker"
        for source in sorted((root / "rest").rglob("*.py"))
        if str(source.relative_to(root)) != REST_SEAM and "worker" in imported_packages(source)
    ]


def test_the_rest_layer_reaches_the_worker_through_its_seam_alone() -> None:
    assert rest_reaches_into_worker() == []


def test_the_rest_seam_rule_sees_a_route_reach_into_the_worker(tmp_path: Path) -> None:
    (tmp_path / "rest").mkdir()
    (tmp_path / "rest" / "worker_seam.py").write_text("from worker.config import WorkerConfig\n")
    (tmp_path / "rest" / "route.py").write_text("import worker.runtime.task_state\n")
    (tmp_path / "rest" / "fine.py").write_text("from rest.worker_seam import WorkerConfig\n")
    assert rest_reaches_into_worker(tmp_path) == ["rest/route.py imports worker"]
