"""The Maven jar cache without the network: a completed bundle is read back as it was
left, an incomplete one is fetched again, and a missing `mvn` says what to do."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from worker.runtime.maven_jars import (
    COMPLETE_MARKER,
    JarBundle,
    JarResolutionError,
    _pom,
    bundle_dir,
    cache_root,
    cached_jars,
    resolve_jars,
)

BUNDLE = JarBundle(
    "demo-1.0",
    ("org.example:demo:1.0", "org.example:extra_2.13:2.1"),
    exclusions=("org.unwanted:*",),
)


def test_cache_root_follows_xdg() -> None:
    assert cache_root({"XDG_CACHE_HOME": "/x"}) == Path("/x/sparkherd")
    assert cache_root({}) == Path.home() / ".cache" / "sparkherd"


def test_a_completed_bundle_is_served_from_the_cache(tmp_path: Path) -> None:
    directory = bundle_dir(BUNDLE, tmp_path)
    directory.mkdir()
    (directory / "b.jar").touch()
    (directory / "a.jar").touch()
    assert cached_jars(BUNDLE, tmp_path) is None, "no marker: a copy that did not finish"
    (directory / COMPLETE_MARKER).touch()
    assert resolve_jars(BUNDLE, tmp_path) == [directory / "a.jar", directory / "b.jar"]


def test_without_maven_the_error_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JarResolutionError, match="needs Maven: install `mvn`"):
        resolve_jars(BUNDLE, tmp_path / "cache")


def test_the_pom_names_every_coordinate() -> None:
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ElementTree.fromstring(_pom(BUNDLE))
    found = [
        ":".join(
            d.findtext(f"m:{part}", namespaces=namespace) or ""
            for part in ("groupId", "artifactId", "version")
        )
        for d in root.iterfind("m:dependencies/m:dependency", namespace)
    ]
    assert found == list(BUNDLE.coordinates)
    excluded = root.findall("m:dependencies/m:dependency/m:exclusions/m:exclusion", namespace)
    assert [e.findtext("m:groupId", namespaces=namespace) for e in excluded] == ["org.unwanted"] * 2


@pytest.mark.parametrize(
    "coordinate", ["org.example:demo", "a:b:c:d", "a:b:1.0</version><x>", "a :b:1"]
)
def test_a_malformed_coordinate_is_refused(coordinate: str) -> None:
    with pytest.raises(ValueError, match="not a Maven coordinate"):
        JarBundle("x", (coordinate,))
