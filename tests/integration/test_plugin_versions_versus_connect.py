"""`*.plugin.version` requirements (KIP-891) read as Kafka Connect 4.1 reads them: the
same specs and versions through Connect's own `PluginUtils.connectorVersionRequirement`
and Maven's `ComparableVersion` (in the oracle's JVM) and through
`worker.plugins.versions`. A range written for Connect admits here exactly the versions
it admits there, and a spec Connect refuses is refused here.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Final

import pytest

from tests.support.connect_oracle import ConnectOracle
from worker.plugins.versions import PluginVersion, VersionSpecError, version_requirement

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

VERSIONS: Final = (
    *("0.1.0", "0.1", "0.1.0.0", "1", "1.0", "1.0.0", "1-ga", "1-final", "1.0-release"),
    *("1-rc1", "1.0rc1", "1.0-cr1", "1.0-alpha", "1.0a1", "1.0-alpha-1", "1.0b2"),
    *("1.0-beta-2", "1.0m3", "1.0-milestone-3", "1.0-SNAPSHOT", "1.0-sp", "1.0-sp1"),
    *("1.0-foo", "1.0-zzz", "1.0.1", "1.1", "1.10", "1.9", "2.0.0-M1", "4.1.1"),
    *("4.1.1.Final", "3.6.1.Final", "0.1.0.dev0", "1-1", "1.1-1", "1..2", "1.-1", "1-"),
    *("1.0.0.X1", "1.0.0-X2", "01.002", "10000000000000000000", "a", "1.a", "1a", "1.0a"),
    "2.0-rc-1",
)
SPECS: Final = (
    *("0.1.0", "[0.1.0]", "[0.1,)", "(,0.1.0]", "(,0.1.0)", "[0.0.9,0.2)", "(0.1.0,1.0]"),
    *("[1.0,2.0),[3.0,)", "(,1.0],[1.2,)", "latest", "[ 0.1.0 , 0.2 ]", "[0.1.0,0.1.0]"),
    *("1.0,2.0", " 4.1.1 ", "1.0-SNAPSHOT", "[1.0", "(1.0)", "[2.0,1.0]", "[1.0,1.0)"),
    *("[1.0,2.0],[1.5,3.0]", "1.0,[2.0]", "[1.0,2.0)x"),
)


@pytest.fixture(scope="module")
def oracle() -> Iterator[ConnectOracle]:
    with ConnectOracle.start() as started:
        yield started


def _sign(number: int) -> int:
    return (number > 0) - (number < 0)


def test_versions_are_ordered_as_maven_orders_them(oracle: ConnectOracle) -> None:
    maven = oracle.jvm.org.apache.maven.artifact.versioning.ComparableVersion
    differ = []
    for left, right in itertools.product(VERSIONS, VERSIONS):
        expected = _sign(maven(left).compareTo(maven(right)))
        mine, theirs = PluginVersion(left), PluginVersion(right)
        found = _sign((mine > theirs) - (mine < theirs))
        if found != expected:
            differ.append(f"{left!r} vs {right!r}: Maven {expected}, here {found}")
    assert not differ, "\n".join(differ)


def _connect_requirement(oracle: ConnectOracle, spec: str) -> tuple[Any, bool]:
    """Connect's range for `spec` (None: any version) and whether Connect refused it."""
    plugin_utils = oracle.jvm.org.apache.kafka.connect.runtime.isolation.PluginUtils
    try:
        return plugin_utils.connectorVersionRequirement(spec), False
    except Exception:
        return None, True


@pytest.mark.parametrize("spec", SPECS)
def test_a_requirement_admits_what_connect_admits(oracle: ConnectOracle, spec: str) -> None:
    artifact_version = oracle.jvm.org.apache.maven.artifact.versioning.DefaultArtifactVersion
    connect, refused = _connect_requirement(oracle, spec)
    if refused:
        with pytest.raises(VersionSpecError):
            version_requirement(spec)
        return
    mine = version_requirement(spec)
    admitted_by_connect = {
        version
        for version in VERSIONS
        if connect is None or connect.containsVersion(artifact_version(version))
    }
    admitted_here = {version for version in VERSIONS if mine is None or mine.admits(version)}
    assert admitted_here == admitted_by_connect
