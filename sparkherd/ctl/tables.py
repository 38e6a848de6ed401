"""Plain-text layout for people: aligned columns and indented blocks, safe to print.

Everything shown comes from a server, so text is cleaned first: control characters (an
ANSI escape in a connector's trace could rewrite the terminal) show as `\\xNN`, and a
cell never spans lines.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final

COLUMN_GAP: Final = "   "
EMPTY_CELL: Final = "-"


def clean(value: object, *, multiline: bool = False) -> str:
    """`value` as printable text: None is empty, strings as they are, anything else as
    compact JSON; control and format characters escaped (newlines kept if `multiline`,
    tabs as spaces)."""
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bool | int | float):
        text = json.dumps(value)
    else:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "".join(_printable(char, multiline) for char in text)


def _printable(char: str, multiline: bool) -> str:
    if char == "\n" and multiline:
        return char
    if char == "\t":
        return "    " if multiline else " "
    if char in "\r\n":
        return " "
    if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
        return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    return char


def cell(value: object) -> str:
    """One table cell: single-line, `-` when empty."""
    return clean(value) or EMPTY_CELL


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Columns aligned on the widest cell, upper-case headers, no trailing spaces."""
    lines = [[header.upper() for header in headers]]
    lines += [[cell(value) for value in row] for row in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "\n".join(
        COLUMN_GAP.join(
            text.ljust(width) for text, width in zip(line, widths, strict=True)
        ).rstrip()
        for line in lines
    )


def fields(pairs: Sequence[tuple[str, object]]) -> str:
    """`Label:  value` lines, values aligned."""
    width = max((len(label) for label, _ in pairs), default=0) + 1
    return "\n".join(f"{label + ':':<{width}}  {cell(value)}" for label, value in pairs)


def indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())
