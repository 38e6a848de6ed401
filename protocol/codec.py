"""Encoding and decoding of subscriptions and assignments, for a process of a given version.

A `Codec` knows versions 0..`known_version` of a `Layout`. It writes a value in the layout
of the value's own `version` (refusing versions it does not know), leaving out the fields
that version lacks. It reads:

- a payload of a version it knows completely; bytes after that version's last field are an
  error, since a writer of that version never puts them there;
- a payload of a newer version as the prefix it knows, skipping the newer fields appended
  after it; the returned value keeps the payload's own `version`, which is how a leader
  notices that it must probe (KIP-268).

Decoding raises only `DecodeError`; encoding raises `EncodeError`.
"""

from __future__ import annotations

from typing import TypeVar

from protocol.errors import EncodeError
from protocol.layout import CURRENT_LAYOUT, Layout, MessageFormat
from protocol.messages import Assignment, Subscription
from protocol.wire import INT16_MAX, Reader, Writer

T = TypeVar("T")


class Codec:
    """The wire format as seen by a process whose newest version is `known_version`."""

    def __init__(self, known_version: int | None = None, layout: Layout = CURRENT_LAYOUT) -> None:
        newest = layout.newest_version
        self.known_version = newest if known_version is None else known_version
        if not 0 <= self.known_version <= newest:
            raise ValueError(f"known_version must be within 0..{newest}, got {known_version}")
        self._layout = layout

    def __repr__(self) -> str:
        return f"Codec(known_version={self.known_version})"

    def encode_subscription(self, sub: Subscription) -> bytes:
        return _encode(self._layout.subscription, sub, self.known_version)

    def decode_subscription(self, data: bytes) -> Subscription:
        return _decode(self._layout.subscription, data, self.known_version)

    def encode_assignment(self, assignment: Assignment) -> bytes:
        return _encode(self._layout.assignment, assignment, self.known_version)

    def decode_assignment(self, data: bytes) -> Assignment:
        return _decode(self._layout.assignment, data, self.known_version)


def _encode(message: MessageFormat[T], value: T, known_version: int) -> bytes:
    version, max_version = message.header(value)
    if not 0 <= version <= known_version:
        raise EncodeError(
            f"cannot write a v{version} {message.kind}: this process knows v0..v{known_version}"
        )
    if not version <= max_version <= INT16_MAX:
        raise EncodeError(
            f"a v{version} {message.kind} needs a supported version within "
            f"{version}..{INT16_MAX}, got {max_version}"
        )
    writer = Writer()
    writer.int16(version, "version")
    writer.int16(max_version, "max_version")
    for layer in message.layers[: version + 1]:
        layer.write(writer, value)
    return writer.getvalue()


def _decode(message: MessageFormat[T], data: bytes, known_version: int) -> T:
    reader = Reader(data, message.kind)
    version = reader.int16("version")
    if version < 0:
        raise reader.error(f"negative version {version}")
    max_version = reader.int16("max_version")
    if max_version < version:
        raise reader.error(f"supported version {max_version} is below the version used {version}")
    value = message.seed(version, max_version)
    for layer in message.layers[: min(version, known_version) + 1]:
        value = layer.read(reader, value)
    if version <= known_version:
        reader.expect_end(f"a v{version} {message.kind}")
    return value


CURRENT_CODEC = Codec()
"""The codec of this release; the module functions below are its methods."""

encode_subscription = CURRENT_CODEC.encode_subscription
decode_subscription = CURRENT_CODEC.decode_subscription
encode_assignment = CURRENT_CODEC.encode_assignment
decode_assignment = CURRENT_CODEC.decode_assignment
