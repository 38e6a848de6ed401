"""JVM jars from Maven Central, resolved once by Maven's own client into a local cache.

pip cannot install Apache Kafka or Spark's Kafka connector, but every machine sparkherd
targets has `mvn` and reaches Maven Central. Maven does the dependency resolution
(versions, exclusions, scopes) exactly as a Java build would; this module only writes a
throw-away POM that names what is wanted and asks Maven to copy the runtime closure into
`<cache>/<bundle>/`, then remembers that it did with a marker file so later starts do
not touch the network.

The cache is `$XDG_CACHE_HOME/sparkherd`, or `~/.cache/sparkherd` (the XDG default).
Concurrent first uses (two test workers, a broker and a worker) serialise on a lock
file, so a half-copied bundle is never read.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from xml.sax.saxutils import escape

COMPLETE_MARKER: Final = ".complete"
RESOLVE_TIMEOUT_S: Final = 900.0
_COORDINATE = re.compile(r"^[A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-]+$")
_EXCLUSION = re.compile(r"^[A-Za-z0-9_.\-]+:(?:[A-Za-z0-9_.\-]+|\*)$")


class JarResolutionError(RuntimeError):
    """Maven is missing, Maven Central cannot be reached, or an artifact does not exist."""


@dataclass(frozen=True)
class JarBundle:
    """A named set of Maven coordinates (`group:artifact:version`) and their runtime
    dependencies; the name is the cache directory, so it should carry the versions."""

    name: str
    coordinates: tuple[str, ...]
    exclusions: tuple[str, ...] = ()
    """`group:artifact` (`*` for any artifact) left out of every coordinate's closure."""

    def __post_init__(self) -> None:
        for coordinate in self.coordinates:
            if not _COORDINATE.match(coordinate):
                raise ValueError(f"not a Maven coordinate group:artifact:version: {coordinate}")
        for exclusion in self.exclusions:
            if not _EXCLUSION.match(exclusion):
                raise ValueError(f"not a Maven exclusion group:artifact: {exclusion}")


def cache_root(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparkherd"


def bundle_dir(bundle: JarBundle, cache: Path) -> Path:
    return cache / bundle.name


def cached_jars(bundle: JarBundle, cache: Path) -> list[Path] | None:
    """The bundle's jars if an earlier resolution completed, else None (no network)."""
    directory = bundle_dir(bundle, cache)
    if not (directory / COMPLETE_MARKER).exists():
        return None
    return sorted(directory.glob("*.jar"))


def resolve_jars(bundle: JarBundle, cache: Path) -> list[Path]:
    """The bundle's jars, resolved with `mvn` on first use and from the cache after."""
    if (jars := cached_jars(bundle, cache)) is not None:
        return jars
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{bundle.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (jars := cached_jars(bundle, cache)) is not None:
            return jars
        _download(bundle, bundle_dir(bundle, cache))
    jars = cached_jars(bundle, cache)
    assert jars is not None
    return jars


def _download(bundle: JarBundle, target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            f"resolving {', '.join(bundle.coordinates)} needs Maven: install `mvn` "
            f"(or place the jars in {target} with an empty {COMPLETE_MARKER} file)"
        )
    shutil.rmtree(target, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="sparkherd-mvn-") as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(_pom(bundle))
        staging = Path(work) / "jars"
        result = subprocess.run(
            [
                mvn,
                "--batch-mode",
                "--quiet",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={staging}",
            ],
            capture_output=True,
            text=True,
            timeout=RESOLVE_TIMEOUT_S,
            check=False,
        )
        if result.returncode != 0 or not staging.is_dir():
            detail = _last_error_line(result.stdout + result.stderr)
            raise JarResolutionError(
                f"Maven could not resolve {', '.join(bundle.coordinates)}: {detail}"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), target)
    (target / COMPLETE_MARKER).touch()


def _pom(bundle: JarBundle) -> str:
    exclusions = "".join(
        f"<exclusion><groupId>{group}</groupId><artifactId>{artifact}</artifactId></exclusion>"
        for group, artifact in (exclusion.split(":") for exclusion in bundle.exclusions)
    )
    dependencies = "".join(_dependency(coordinate, exclusions) for coordinate in bundle.coordinates)
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">'
        "<modelVersion>4.0.0</modelVersion>"
        "<groupId>sparkherd.cache</groupId>"
        f"<artifactId>{escape(bundle.name)}</artifactId>"
        "<version>1</version><packaging>pom</packaging>"
        f"<dependencies>{dependencies}</dependencies>"
        "</project>"
    )


def _dependency(coordinate: str, exclusions: str) -> str:
    group, artifact, version = coordinate.split(":")
    return (
        f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version><exclusions>{exclusions}</exclusions></dependency>"
    )


def _last_error_line(output: str) -> str:
    errors = [line.strip() for line in output.splitlines() if "ERROR" in line]
    return errors[0] if errors else (output.strip().splitlines() or ["no output"])[-1]


def classpath(jars: Sequence[Path]) -> str:
    return os.pathsep.join(str(jar) for jar in jars)
