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
    "worker.plugins.task_state": "task states, and what a FAILED task's trace says",
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
        "from worker.plugins.task_state import TaskState\n"
        "from worker.runtime import task_offsets\n"
        "from worker.plugins.checkpoint_layout import checkpoint_dir_for\n"
        "import worker.runtime.spark_task_runtime\n"
    )
    assert herder_reaches_into_worker(tmp_path) == [
        "herder/reach.py imports worker.plugins.checkpoint_layout",
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
    (tmp_path / "rest" / "route.py").write_text("import worker.plugins.task_state\n")
    (tmp_path / "rest" / "fine.py").write_text("from rest.worker_seam import WorkerConfig\n")
    assert rest_reaches_into_worker(tmp_path) == ["rest/route.py imports worker"]


WORKER_FLOORS = ("plugins", "kafka", "records", "config", "admission", "runtime", "connectors")
"""worker/'s sub-packages, ground floor first: each imports only those before it, so
`worker/plugins/` (the plugin API, names, checkpoint layout, claims, task states) imports
nothing else of worker/. `worker/driver_load.py` stands above them all."""

HERDER_FLOORS = ("assignor", "stores", "tasks", "member", "admin")
"""herder/'s sub-packages by concern, lowest first: the assignor (pure), the stores on
Kafka, a worker's tasks and their machine, the member and its machine, the admin surface.
herder/'s own modules beside them are shared types (errors, requests, views, settings,
metrics, the runtime seam, cancellation) that import no sub-package, except
`herder/herder.py`, which composes them all."""


def floor_breaches(package: str, floors: tuple[str, ...], root: Path = ROOT) -> list[str]:
    """Imports inside `package` that go sideways or up its floors: a module of floor i may
    import floors 0..i-1 and its own; a module beside the floors imports none of them
    (worker/'s stand above them all, and so does herder/herder.py, the composition)."""
    found: list[str] = []
    for source in sorted((root / package).rglob("*.py")):
        parts = source.relative_to(root / package).parts
        if len(parts) == 1:
            above = package == "worker" or source.name == "herder.py"
            allowed = set(floors) if above else set()
        elif parts[0] in floors:
            allowed = set(floors[: floors.index(parts[0]) + 1])
        else:
            found.append(f"{source.relative_to(root)} is on no floor")
            continue
        found.extend(
            f"{source.relative_to(root)} imports {module}"
            for module, _ in imports(source)
            if module.split(".")[0] == package
            and module.count(".") >= 1
            and module.split(".")[1] in floors
            and module.split(".")[1] not in allowed
        )
    return found


def test_worker_sub_packages_import_only_the_floors_below_them() -> None:
    assert floor_breaches("worker", WORKER_FLOORS) == []


def test_herder_sub_packages_import_only_the_floors_below_them() -> None:
    assert floor_breaches("herder", HERDER_FLOORS) == []


def test_the_floor_rule_sees_an_import_up_or_sideways(tmp_path: Path) -> None:
    for floor in ("plugins", "kafka", "runtime"):
        (tmp_path / "worker" / floor).mkdir(parents=True)
    (tmp_path / "worker" / "plugins" / "api.py").write_text("from worker.kafka.client import X\n")
    (tmp_path / "worker" / "kafka" / "client.py").write_text(
        "from worker.plugins.api import Task\nfrom worker.kafka import sink\n"
    )
    (tmp_path / "worker" / "runtime" / "run.py").write_text("from worker.kafka.client import X\n")
    (tmp_path / "worker" / "driver_load.py").write_text("from worker.runtime.run import R\n")
    assert floor_breaches("worker", ("plugins", "kafka", "runtime"), tmp_path) == [
        "worker/plugins/api.py imports worker.kafka.client"
    ]
    (tmp_path / "herder" / "tasks").mkdir(parents=True)
    (tmp_path / "herder" / "errors.py").write_text("from herder.tasks.work import LocalWork\n")
    (tmp_path / "herder" / "herder.py").write_text("from herder.tasks.work import LocalWork\n")
    (tmp_path / "herder" / "tasks" / "work.py").write_text("from herder.errors import Refused\n")
    assert floor_breaches("herder", ("tasks",), tmp_path) == [
        "herder/errors.py imports herder.tasks.work"
    ]
