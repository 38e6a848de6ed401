"""The one rule for names that arrive over REST and end up in paths, logs and headers.

A connector name becomes a checkpoint directory (`<checkpoint.root>/<name>`), a Kafka
record key, log lines and a `Location` header; a logger name becomes log lines on every
worker. So wherever a name comes from (a JSON body, a URL path segment, a config
record), it must be one plain path component that prints on one line: no separators,
no `.`/`..`, no control or line-breaking characters, and short enough in UTF-8 bytes
for every file system's name limit.
"""

from __future__ import annotations

import unicodedata
from typing import Final

MAX_NAME_BYTES: Final = 255
"""NAME_MAX of Linux file systems: a checkpoint directory is named after the connector."""
_FORBIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Control, format (bidi overrides, zero-width), surrogate, line and paragraph separators:
characters that break a log line or disguise what a name says."""


class InvalidName(ValueError):
    """A name that cannot be used; the message says which rule it breaks."""


def check_name(name: str, what: str = "connector name") -> str:
    """`name` if it keeps the rule; raises `InvalidName` naming the rule otherwise."""
    if not name or name != name.strip():
        raise InvalidName(f"{what} must be non-empty and without surrounding whitespace")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidName(f"{what} must be at most {MAX_NAME_BYTES} bytes in UTF-8")
    if name in (".", "..") or any(c in name for c in "/\\"):
        raise InvalidName(f"{what} must not contain '/' or '\\' nor be '.' or '..'")
    if any(unicodedata.category(c) in _FORBIDDEN_CATEGORIES for c in name):
        raise InvalidName(f"{what} must not contain control, format or line-separator characters")
    return name
