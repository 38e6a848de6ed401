"""Where connectors write, compared: no connector may write into another's data or into
the framework's checkpoints.

Deleting a connector's offsets removes its checkpoints, and Spark's file sink owns the
whole directory it writes (its `_spark_metadata` log decides which files count). A path
that overlaps another connector's output, or lies in `checkpoint.root`, would let one
REST call damage data it was never given. Locations are compared in a normal form, so
`..`, symlinks, trailing slashes and `file:` URIs cannot disguise an overlap.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from worker.plugins import ConfigProblem


def normal_form(location: str, cwd: Path) -> str:
    """Local paths (plain or `file:`) absolute with symlinks resolved, as Spark would
    reach them from `cwd`; other URIs with scheme and host lower-cased and the path
    normalised."""
    parts = urlsplit(location)
    if parts.scheme in ("", "file") or len(parts.scheme) == 1:  # a Windows drive is a path
        path = parts.path if parts.scheme == "file" else location
        return str((cwd / Path(path).expanduser()).resolve())
    path = posixpath.normpath("/" + parts.path.lstrip("/"))
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path.rstrip('/')}"


def overlaps(a: str, b: str) -> bool:
    """Whether one normal form is the other or lies under it."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


@dataclass(frozen=True)
class Locations:
    """A connector's locations by setting: what it writes and what it only reads."""

    written: Mapping[str, str]
    read: Mapping[str, str]


def location_problems(
    locations: Locations,
    others: Mapping[str, Iterable[str]],
    checkpoint_root: Path,
    cwd: Path,
) -> list[ConfigProblem]:
    """`others` maps every other connector to the locations it writes."""
    root = normal_form(str(checkpoint_root), cwd)
    taken = {name: [normal_form(p, cwd) for p in paths] for name, paths in others.items()}
    problems = []
    for key, value in {**locations.read, **locations.written}.items():
        mine = normal_form(value, cwd)
        if overlaps(mine, root):
            problems.append(
                ConfigProblem(
                    key, f"{value!r} overlaps checkpoint.root, which holds the workers' checkpoints"
                )
            )
        elif key in locations.written:
            clash = sorted(
                name for name, paths in taken.items() if any(overlaps(mine, p) for p in paths)
            )
            if clash:
                problems.append(
                    ConfigProblem(
                        key,
                        f"{value!r} overlaps where connector {clash[0]} writes; each "
                        "connector needs an output location of its own",
                    )
                )
    return problems
