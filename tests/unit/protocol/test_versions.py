"""`connect.protocol` parsing and what each mode offers."""

from __future__ import annotations

import pytest

import protocol
from protocol.versions import (
    DEFAULT_CONNECT_PROTOCOL,
    ConnectProtocol,
    is_cooperative,
    max_version_for,
    parse_connect_protocol,
)


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("eager", ConnectProtocol.EAGER),
        ("compatible", ConnectProtocol.COMPATIBLE),
        ("sessioned", ConnectProtocol.SESSIONED),
        (" Compatible ", ConnectProtocol.COMPATIBLE),
        ("EAGER", ConnectProtocol.EAGER),
    ],
)
def test_known_modes_parse_case_insensitively(text: str, mode: ConnectProtocol) -> None:
    assert parse_connect_protocol(text) is mode


@pytest.mark.parametrize("text", ["", "cooperative", "eager,compatible"])
def test_other_values_are_refused_with_the_allowed_ones(text: str) -> None:
    with pytest.raises(
        ValueError, match=r"connect\.protocol must be one of eager, compatible, sessioned; got "
    ):
        parse_connect_protocol(text)


def test_compatible_is_the_default() -> None:
    assert DEFAULT_CONNECT_PROTOCOL is ConnectProtocol.COMPATIBLE


@pytest.mark.parametrize(
    ("mode", "known", "expected"),
    [
        (ConnectProtocol.EAGER, 2, 0),
        (ConnectProtocol.EAGER, 3, 0),
        (ConnectProtocol.COMPATIBLE, 2, 2),
        (ConnectProtocol.SESSIONED, 2, 2),
        (ConnectProtocol.COMPATIBLE, 3, 3),
    ],
)
def test_eager_offers_v0_and_the_others_the_newest_known(
    mode: ConnectProtocol, known: int, expected: int
) -> None:
    assert max_version_for(mode, known) == expected


def test_the_default_known_version_is_the_current_one() -> None:
    assert max_version_for(ConnectProtocol.COMPATIBLE) == protocol.CURRENT_VERSION == 5


def test_only_v1_and_later_are_cooperative() -> None:
    assert [is_cooperative(version) for version in range(4)] == [False, True, True, True]


def test_the_package_exports_what_the_herder_uses() -> None:
    assert protocol.PROTOCOL_NAME == "sparkherd"
    assert issubclass(protocol.ProtocolError, ValueError)
    assert callable(protocol.codec.decode_subscription)
    assert callable(protocol.negotiation.plan_versions)
