"""Kafka's classic primitive types: big-endian integers, int16-length strings, int32-count
arrays and int32-length nullable bytes.

Every read is bounds-checked before it happens, so a hostile or truncated payload ends in a
`DecodeError` naming the field and offset, never in a `struct.error` or an allocation sized
by an attacker-chosen count.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from protocol.errors import DecodeError, EncodeError

INT16_MAX = 2**15 - 1
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
NULL_LENGTH = -1

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class Writer:
    """Accumulates one payload; `field` arguments only serve error messages."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def getvalue(self) -> bytes:
        return b"".join(self._parts)

    def int8(self, value: int, field: str) -> None:
        self._pack(_INT8, value, field)

    def int16(self, value: int, field: str) -> None:
        self._pack(_INT16, value, field)

    def int32(self, value: int, field: str) -> None:
        self._pack(_INT32, value, field)

    def int64(self, value: int, field: str) -> None:
        self._pack(_INT64, value, field)

    def string(self, value: str, field: str) -> None:
        encoded = _utf8(value, field)
        if len(encoded) > INT16_MAX:
            raise EncodeError(
                f"{field} is {len(encoded)} bytes in UTF-8; a string holds at most {INT16_MAX}"
            )
        self.int16(len(encoded), field)
        self._parts.append(encoded)

    def nullable_string(self, value: str | None, field: str) -> None:
        if value is None:
            self.int16(NULL_LENGTH, field)
        else:
            self.string(value, field)

    def nullable_bytes(self, value: bytes | None, field: str) -> None:
        if value is None:
            self.int32(NULL_LENGTH, field)
            return
        if len(value) > INT32_MAX:
            raise EncodeError(f"{field} is {len(value)} bytes; bytes hold at most {INT32_MAX}")
        self.int32(len(value), field)
        self._parts.append(value)

    def array_count(self, count: int, field: str) -> None:
        self.int32(count, f"{field} count")

    def int32_array(self, values: Sequence[int], field: str) -> None:
        """An array of int32, packed at once: allocations hold thousands of them."""
        self.array_count(len(values), field)
        try:
            self._parts.append(struct.pack(f">{len(values)}i", *values))
        except struct.error:
            raise EncodeError(f"{field} holds a value that does not fit a signed int32") from None

    def _pack(self, codec: struct.Struct, value: int, field: str) -> None:
        try:
            self._parts.append(codec.pack(value))
        except struct.error:
            bits = codec.size * 8
            raise EncodeError(f"{field} = {value} does not fit a signed int{bits}") from None


def _utf8(value: str, field: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"{field} cannot be written as UTF-8: {exc.reason}") from None


class Reader:
    """Reads one payload front to back; `context` prefixes every error message."""

    def __init__(self, data: bytes, context: str) -> None:
        self._data = bytes(data)
        self._offset = 0
        self.context = context

    @property
    def remaining(self) -> int:
        return len(self._data) - self._offset

    def error(self, message: str) -> DecodeError:
        return DecodeError(f"{self.context}: {message} (at byte {self._offset})")

    def int8(self, field: str) -> int:
        return self._unpack(_INT8, field)

    def int16(self, field: str) -> int:
        return self._unpack(_INT16, field)

    def int32(self, field: str) -> int:
        return self._unpack(_INT32, field)

    def int64(self, field: str) -> int:
        return self._unpack(_INT64, field)

    def string(self, field: str) -> str:
        value = self.nullable_string(field)
        if value is None:
            raise self.error(f"{field} is null but is required")
        return value

    def nullable_string(self, field: str) -> str | None:
        length = self.int16(f"{field} length")
        if length == NULL_LENGTH:
            return None
        raw = self._take(self._checked_length(length, field), field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"{field} is not valid UTF-8: {exc.reason}") from None

    def nullable_bytes(self, field: str) -> bytes | None:
        length = self.int32(f"{field} length")
        if length == NULL_LENGTH:
            return None
        return self._take(self._checked_length(length, field), field)

    def array_count(self, field: str, min_element_size: int) -> int:
        """An array's count, refused when the bytes left cannot hold that many elements."""
        count = self.int32(f"{field} count")
        if count < 0:
            raise self.error(f"{field} has a negative count {count}")
        if count * min_element_size > self.remaining:
            raise self.error(
                f"{field} declares {count} elements of at least {min_element_size} bytes "
                f"but only {self.remaining} bytes are left"
            )
        return count

    def int32_array(self, field: str) -> tuple[int, ...]:
        count = self.array_count(field, _INT32.size)
        raw = self._take(count * _INT32.size, field)
        return struct.unpack(f">{count}i", raw)

    def expect_end(self, what: str) -> None:
        if self.remaining:
            raise self.error(f"{self.remaining} unexpected bytes after the end of {what}")

    def _checked_length(self, length: int, field: str) -> int:
        if length < 0:
            raise self.error(f"{field} has a negative length {length}")
        return length

    def _take(self, size: int, field: str) -> bytes:
        if size > self.remaining:
            raise self.error(f"truncated: {field} needs {size} bytes, {self.remaining} left")
        start = self._offset
        self._offset += size
        return self._data[start : self._offset]

    def _unpack(self, codec: struct.Struct, field: str) -> int:
        raw = self._take(codec.size, field)
        value: int = codec.unpack(raw)[0]
        return value
