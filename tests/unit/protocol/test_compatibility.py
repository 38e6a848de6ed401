"""Every (writer version, reader version) pair: a reader gets the prefix it knows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from protocol import CURRENT_VERSION
from protocol.codec import Codec
from protocol.errors import DecodeError, EncodeError
from protocol.layout import CURRENT_LAYOUT
from tests.unit.protocol.samples import (
    FUTURE_VERSION,
    assignment,
    codec_of_release,
    readable,
    subscription,
)

VERSIONS = range(FUTURE_VERSION + 1)
PAIRS = [(writer, reader) for writer in VERSIONS for reader in VERSIONS]


def test_the_current_layout_ends_at_the_current_version() -> None:
    assert CURRENT_LAYOUT.newest_version == CURRENT_VERSION


@pytest.mark.parametrize(("writer", "reader"), PAIRS)
def test_subscription_is_read_up_to_what_the_reader_knows(writer: int, reader: int) -> None:
    value = subscription(writer)
    decoded = codec_of_release(reader).decode_subscription(
        codec_of_release(writer).encode_subscription(value)
    )
    assert decoded == readable(value, reader)
    assert (decoded.version, decoded.max_version) == (writer, writer)


@pytest.mark.parametrize(("writer", "reader"), PAIRS)
def test_assignment_is_read_up_to_what_the_reader_knows(writer: int, reader: int) -> None:
    value = assignment(writer)
    decoded = codec_of_release(reader).decode_assignment(
        codec_of_release(writer).encode_assignment(value)
    )
    assert decoded == readable(value, reader)
    assert (decoded.version, decoded.leader_max_version) == (writer, writer)


OLDER_PAIRS = [(older, version) for version in VERSIONS for older in range(version)]


@pytest.mark.parametrize(("older", "version"), OLDER_PAIRS)
def test_a_newer_payload_extends_the_older_payload_of_the_same_value(
    older: int, version: int
) -> None:
    """Append-only evolution: past the version field, a v(n) payload is the v(older)
    payload of the same value followed by the newer fields."""
    codec = codec_of_release(FUTURE_VERSION)
    sub = subscription(version)
    new = codec.encode_subscription(sub)
    old = codec.encode_subscription(replace(readable(sub, older), version=older))
    assert new[2:].startswith(old[2:])
    asg = assignment(version)
    new = codec.encode_assignment(asg)
    old = codec.encode_assignment(replace(readable(asg, older), version=older))
    assert new[2:].startswith(old[2:])


@pytest.mark.parametrize("version", VERSIONS)
def test_bytes_after_a_known_version_are_refused(version: int) -> None:
    codec = codec_of_release(FUTURE_VERSION)
    with pytest.raises(DecodeError, match="1 unexpected bytes after the end of a v"):
        codec.decode_subscription(codec.encode_subscription(subscription(version)) + b"\0")
    with pytest.raises(DecodeError, match="unexpected bytes"):
        codec.decode_assignment(codec.encode_assignment(assignment(version)) + b"\0")


def test_bytes_after_the_known_prefix_of_a_newer_version_are_skipped() -> None:
    """An older reader cannot tell newer fields from garbage, so it skips both."""
    payload = codec_of_release(FUTURE_VERSION).encode_subscription(subscription(FUTURE_VERSION))
    decoded = Codec().decode_subscription(payload + b"anything")
    assert decoded == readable(subscription(FUTURE_VERSION), CURRENT_VERSION)


@pytest.mark.parametrize("known", range(CURRENT_VERSION))
def test_a_process_refuses_to_write_a_version_it_does_not_know(known: int) -> None:
    codec = Codec(known)
    with pytest.raises(EncodeError, match=f"cannot write a v{known + 1} subscription"):
        codec.encode_subscription(subscription(known + 1))
    with pytest.raises(EncodeError, match=f"cannot write a v{known + 1} assignment"):
        codec.encode_assignment(assignment(known + 1))


@pytest.mark.parametrize("known", [-1, CURRENT_VERSION + 1])
def test_a_codec_knows_only_versions_of_its_layout(known: int) -> None:
    with pytest.raises(ValueError, match="known_version must be within"):
        Codec(known)
