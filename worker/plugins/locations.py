"""Where connectors read and write, judged as Spark will reach it: no connector may write
into another's data or into the framework's checkpoints, nor leave the worker's
`connector.allowed.paths`.

Deleting a connector's offsets removes its checkpoints, and Spark's file sink owns the
whole directory it writes (its `_spark_metadata` log decides which files count). A path
that overlaps another connector's output, or lies in `checkpoint.root`, would let one
REST call damage data it was never given.

A check is only as good as its reading of the path, and Hadoop's `Path` reads text
unlike Python's URL and path functions: it takes `?` and `#` as part of a name (no query,
no fragment), never expands `~`, removes `..` before the file system follows symlinks,
and Spark's file source expands glob characters. Text those readings disagree on is
refused; the rest is put in one normal form, and that form, not the text, is what a
task hands Spark (`RegistryPlugins.placed`), so Spark writes where the checks looked.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from worker.plugins.api import ConfigProblem

ALLOWED_PATHS_KEY: Final = "connector.allowed.paths"
LOCAL_SCHEMES: Final = ("", "file")

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_AMBIGUOUS_CHARACTERS: Final = {
    "?": "'?', a query to a URI reader but part of the name (or a glob) to Hadoop",
    "#": "'#', a fragment to a URI reader but part of the name to Hadoop",
    "\\": "'\\', which Hadoop's glob takes as an escape",
    **dict.fromkeys("*[]{}", "a glob character, which Spark expands when it reads"),
}


class AmbiguousLocation(ValueError):
    """Text that Spark and the checks could read as different places."""


def normal_form(location: str, cwd: Path) -> str:
    """The one form of `location` both the checks and Spark use: local paths (plain or
    `file:`) absolute from `cwd` with symlinks resolved, other URIs as
    `scheme://authority/path` with the scheme lower-cased (the authority keeps its case:
    a bucket's name may need it). Surrounding whitespace is dropped, as the connectors'
    settings drop it."""
    text = location.strip()
    if not text:
        raise AmbiguousLocation("is empty")
    for character, why in _AMBIGUOUS_CHARACTERS.items():
        if character in text:
            raise AmbiguousLocation(f"holds {why}; name the location without it")
    scheme, authority, path = hadoop_parts(text)
    segments = path.split("/")
    if any(segment.startswith("~") for segment in segments):
        raise AmbiguousLocation(
            "starts a segment with '~', which Hadoop does not expand to a home directory; "
            "name the directory itself"
        )
    if ".." in segments:
        raise AmbiguousLocation(
            "has a '..' segment, which Hadoop removes before symlinks are followed and "
            "the file system after; name the location without it"
        )
    if scheme and not _SCHEME.fullmatch(scheme):
        raise AmbiguousLocation(f"has {scheme!r} before ':', which Hadoop takes for a scheme")
    if scheme and (path or not authority) and not path.startswith("/"):
        raise AmbiguousLocation("is a URI with a relative path, which Hadoop refuses")
    path = re.sub("/+", "/", path)
    if scheme.lower() in LOCAL_SCHEMES:
        if authority:
            raise AmbiguousLocation(
                "names a host after '//', which a local path has none of; write one '/'"
            )
        try:
            return str((cwd / path).resolve())
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise AmbiguousLocation(f"cannot be resolved: {exc}") from None
    path = posixpath.normpath("/" + path.lstrip("/")).rstrip("/")
    return f"{scheme.lower()}://{authority}{path}"


def hadoop_parts(text: str) -> tuple[str, str, str]:
    """Scheme, authority and path as Hadoop's `Path(String)` splits them: a scheme is
    what precedes a ':' that comes before any '/', an authority follows '//', and the
    rest is the path, query and fragment included."""
    colon, slash = text.find(":"), text.find("/")
    scheme, start = "", 0
    if colon != -1 and (slash == -1 or colon < slash):
        scheme, start = text[:colon], colon + 1
    authority = ""
    if text.startswith("//", start) and len(text) - start > 2:
        end = text.find("/", start + 2)
        end = len(text) if end == -1 else end
        authority, start = text[start + 2 : end], end
    return scheme, authority, text[start:]


def is_within(location: str, root: str) -> bool:
    """Whether one normal form is `root` or lies under it."""
    location, root = _compared(location), _compared(root)
    return location == root or location.startswith(root.rstrip("/") + "/")


def _compared(form: str) -> str:
    """An authority compared blind to case, as a host name is: two buckets whose names
    differ in case only are taken for one, erring toward an overlap."""
    scheme, separator, rest = form.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}{separator}{authority.lower()}{slash}{path}" if separator else form


def overlaps(a: str, b: str) -> bool:
    """Whether one normal form is the other or lies under it."""
    return is_within(a, b) or is_within(b, a)


@dataclass(frozen=True)
class Locations:
    """A connector's locations by setting: what it writes and what it only reads."""

    written: Mapping[str, str]
    read: Mapping[str, str]


def placed_locations(
    locations: Locations,
    checkpoint_root: Path,
    cwd: Path,
    allowed_roots: Sequence[str] = (),
) -> tuple[dict[str, str], list[ConfigProblem]]:
    """The normal form of each location that keeps the rules about this connector alone
    (readable text, inside an allowed root when there are any, outside `checkpoint.root`),
    by key, and a problem for each that does not. `allowed_roots` empty: anywhere."""
    root = str((cwd / checkpoint_root).resolve())
    allowed = [normal_form(path, cwd) for path in allowed_roots]
    forms: dict[str, str] = {}
    problems = []
    for key, value in {**locations.read, **locations.written}.items():
        try:
            form = normal_form(value, cwd)
        except AmbiguousLocation as exc:
            problems.append(ConfigProblem(key, str(exc)))
            continue
        if allowed and not any(is_within(form, path) for path in allowed):
            problems.append(
                ConfigProblem(
                    key,
                    f"lies outside {ALLOWED_PATHS_KEY} ({', '.join(allowed)}), where this "
                    "worker lets connectors read and write",
                )
            )
        elif overlaps(form, root):
            problems.append(
                ConfigProblem(
                    key, f"{value!r} overlaps checkpoint.root, which holds the workers' checkpoints"
                )
            )
        else:
            forms[key] = form
    return forms, problems


def file_problems(
    files: Mapping[str, Iterable[str]],
    checkpoint_root: Path,
    cwd: Path,
    allowed_roots: Sequence[str] = (),
) -> list[ConfigProblem]:
    """Files on the worker that a connector's clients read (TLS keys, certificates, trust
    stores), by the key that names them, held to the rules of a location it reads: with
    `connector.allowed.paths`, a connector presents no key file outside it as its own
    (another team's, the worker's)."""
    return [
        problem
        for key, paths in files.items()
        for path in paths
        for problem in placed_locations(
            Locations({}, {key: path}), checkpoint_root, cwd, allowed_roots
        )[1]
    ]


def location_problems(
    locations: Locations,
    others: Mapping[str, Iterable[str]],
    checkpoint_root: Path,
    cwd: Path,
    allowed_roots: Sequence[str] = (),
) -> list[ConfigProblem]:
    """`others` maps every other connector to the locations it writes; one it wrote as
    text the rules now refuse (stored before them) counts as nowhere, as its tasks refuse
    to start on it."""
    forms, problems = placed_locations(locations, checkpoint_root, cwd, allowed_roots)
    taken = {name: list(_readable(paths, cwd)) for name, paths in others.items()}
    for key, form in forms.items():
        if key not in locations.written:
            continue
        clash = sorted(
            name for name, paths in taken.items() if any(overlaps(form, p) for p in paths)
        )
        if clash:
            problems.append(
                ConfigProblem(
                    key,
                    f"{locations.written[key]!r} overlaps where connector {clash[0]} writes; "
                    "each connector needs an output location of its own",
                )
            )
    return problems


def _readable(paths: Iterable[str], cwd: Path) -> Iterable[str]:
    for path in paths:
        with contextlib.suppress(AmbiguousLocation):
            yield normal_form(path, cwd)
