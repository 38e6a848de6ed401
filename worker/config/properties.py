"""Reader for Java `.properties` text, so Kafka Connect worker files load unchanged.

Follows `java.util.Properties.load` for what real worker files contain: `#`/`!` comment
lines, `key=value`, `key: value` and `key value` entries, backslash line continuation and
backslash escapes (`\\t`, `\\n`, `\\uXXXX`, `\\=`, ...). One deliberate difference: trailing
whitespace of a value is dropped (unless escaped), because an invisible trailing space in
a host name or topic is a mistake far more often than it is intended.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_WHITESPACE = " \t\f"
_SEPARATORS = "=:"
_NATURAL_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")


class PropertiesSyntaxError(ValueError):
    """Text that `java.util.Properties` would also refuse (a malformed `\\uXXXX` escape)."""


def parse_properties(text: str) -> dict[str, str]:
    """Parse properties text into a dict; a key given twice keeps its last value."""
    entries: dict[str, str] = {}
    for line_number, line in _logical_lines(text):
        raw_key, raw_value = _split_entry(line)
        entries[_unescape(raw_key, line_number)] = _unescape(raw_value, line_number)
    return entries


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (first natural line number, logical line) with comments and blanks skipped."""
    pending: list[str] = []
    start = 0
    for number, natural in enumerate(_NATURAL_LINE_BREAK.split(text), start=1):
        line = natural.lstrip(_WHITESPACE)
        if not pending:
            if not line or line[0] in "#!":
                continue
            start = number
        if _ends_with_continuation(line):
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield start, "".join(pending)
        pending = []
    if pending:
        yield start, "".join(pending)


def _ends_with_continuation(line: str) -> bool:
    """An odd run of trailing backslashes continues the line; an even run is escaped ones."""
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_entry(line: str) -> tuple[str, str]:
    """Split at the first unescaped separator: '=', ':' or whitespace (then one '=' or ':')."""
    end = 0
    while end < len(line) and line[end] not in _SEPARATORS and line[end] not in _WHITESPACE:
        end += 2 if line[end] == "\\" else 1
    end = min(end, len(line))
    start = end
    while start < len(line) and line[start] in _WHITESPACE:
        start += 1
    if start < len(line) and line[start] in _SEPARATORS:
        start += 1
    return line[:end], line[start:].lstrip(_WHITESPACE)


def _unescape(raw: str, line_number: int) -> str:
    """Resolve backslash escapes and drop trailing whitespace that was not escaped."""
    chars: list[str] = []
    significant = 0
    index = 0
    while index < len(raw):
        char = raw[index]
        if char != "\\":
            chars.append(char)
            if char not in _WHITESPACE:
                significant = len(chars)
            index += 1
            continue
        escaped = raw[index + 1 : index + 2]
        if escaped == "u":
            digits = raw[index + 2 : index + 6]
            if not _HEX4.fullmatch(digits):
                raise PropertiesSyntaxError(
                    f"line {line_number}: malformed \\uXXXX escape '\\u{digits}'"
                )
            chars.append(chr(int(digits, 16)))
            index += 6
        else:
            chars.append(_SIMPLE_ESCAPES.get(escaped, escaped))
            index += 2
        significant = len(chars)
    return "".join(chars[:significant])
