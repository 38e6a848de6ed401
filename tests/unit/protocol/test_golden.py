"""Golden byte vectors, one per version and message kind, asserted both ways.

The vectors in tests/data/protocol/ pin the wire format: a change that alters the bytes of
an existing version breaks mixed-version groups and must fail here. Regenerate them only
for a new case: SPARKHERD_REGEN_GOLDEN=1 .venv/bin/python -m pytest tests/unit/protocol
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol import CURRENT_VERSION
from protocol.allocation_format import ContentFormat
from protocol.codec import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.connector_table import NO_TABLE
from protocol.messages import NO_LOAD, Allocation, Assignment, AssignmentError, Subscription
from tests.unit.protocol.samples import RUNNING, assignment, subscription, tasks

DATA = Path(__file__).resolve().parents[2] / "data" / "protocol"
ZLIB_BEST_COMPRESSION_HEADER = b"\x78\xda"
REGENERATE = os.environ.get("SPARKHERD_REGEN_GOLDEN") == "1"

BIG = Allocation.of(
    [f"connector-{c:03d}" for c in range(0, 60, 3)],
    [task for c in range(60) for task in tasks(f"connector-{c:03d}", c % 7, 10, 11, 12)],
)

CASES: dict[str, Subscription | Assignment] = {
    "subscription-v0": subscription(0),
    "subscription-v0-downgraded-from-v2": subscription(0, max_version=2),
    "subscription-v1": subscription(1),
    "subscription-v2": subscription(2),
    "subscription-v2-defaults": subscription(
        2, allocation=Allocation(), instance_id=None, leaving=False, config_offset=-1
    ),
    "subscription-v2-unicode": subscription(2, worker_id="wörker-ä:8083", instance_id=""),
    "subscription-v3": subscription(3),
    "subscription-v4": subscription(4),
    "subscription-v4-by-name": subscription(4, connector_table=NO_TABLE),
    "subscription-v4-outside-the-table": subscription(
        4, allocation=RUNNING.union(Allocation.of(["deleted-sink"], tasks("deleted-sink", 0)))
    ),
    "subscription-v5": subscription(5),
    "subscription-v5-unmeasured": subscription(5, load=NO_LOAD),
    "subscription-v5-overloaded": subscription(5, load=2468, connector_table=NO_TABLE),
    "assignment-v0": assignment(0),
    "assignment-v1": assignment(1, leader_max_version=2),
    "assignment-v2": assignment(2),
    "assignment-v3": assignment(3),
    "assignment-v4": assignment(4),
    "assignment-v4-by-name": assignment(4, connector_table=NO_TABLE),
    "assignment-v5": assignment(5),
    "assignment-v2-version-probe": assignment(
        2,
        error=AssignmentError.VERSION_PROBE,
        assigned=Allocation(),
        revoked=Allocation(),
        delay_ms=0,
    ),
    "assignment-v1-malformed-subscription": assignment(
        1, leader_max_version=2, error=AssignmentError.MALFORMED_SUBSCRIPTION, assigned=Allocation()
    ),
    "assignment-v2-config-mismatch": assignment(
        2, error=AssignmentError.CONFIG_MISMATCH, assigned=Allocation(), revoked=Allocation()
    ),
}
COMPRESSED_CASES: dict[str, Subscription | Assignment] = {
    "subscription-v2-compressed": subscription(2, allocation=BIG),
    "assignment-v2-compressed": assignment(2, assigned=BIG, revoked=BIG),
}


def encode(value: Subscription | Assignment) -> bytes:
    if isinstance(value, Subscription):
        return encode_subscription(value)
    return encode_assignment(value)


def decode(name: str, data: bytes) -> Subscription | Assignment:
    if name.startswith("subscription"):
        return decode_subscription(data)
    return decode_assignment(data)


def golden(name: str, value: Subscription | Assignment) -> bytes:
    path = DATA / f"{name}.hex"
    if REGENERATE:
        data = encode(value)
        lines = [data[i : i + 32].hex() for i in range(0, len(data), 32)]
        header = f"# {name}: the value is in tests/unit/protocol/test_golden.py"
        path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    if not path.exists():
        pytest.fail(f"{path} is missing; regenerate with SPARKHERD_REGEN_GOLDEN=1")
    text = path.read_text(encoding="utf-8")
    return bytes.fromhex("".join(ln for ln in text.splitlines() if not ln.startswith("#")))


@pytest.mark.parametrize("name", CASES)
def test_encoding_matches_golden_bytes(name: str) -> None:
    assert encode(CASES[name]) == golden(name, CASES[name])


@pytest.mark.parametrize("name", CASES)
def test_golden_bytes_decode_to_the_value(name: str) -> None:
    assert decode(name, golden(name, CASES[name])) == CASES[name]


@pytest.mark.parametrize("name", COMPRESSED_CASES)
def test_compressed_golden_bytes_decode_to_the_value(name: str) -> None:
    """zlib's output may differ between zlib builds, so only decoding is pinned here."""
    value = COMPRESSED_CASES[name]
    data = golden(name, value)
    assert bytes([ContentFormat.ZLIB]) + ZLIB_BEST_COMPRESSION_HEADER in data
    assert decode(name, data) == value
    assert decode(name, encode(value)) == value


def test_every_version_of_both_kinds_has_a_golden_vector() -> None:
    names = CASES.keys() | COMPRESSED_CASES.keys()
    for kind in ("subscription", "assignment"):
        for version in range(CURRENT_VERSION + 1):
            assert any(name.startswith(f"{kind}-v{version}") for name in names)


def test_no_stale_golden_files() -> None:
    names = CASES.keys() | COMPRESSED_CASES.keys()
    assert {path.stem for path in DATA.glob("*.hex")} == names
