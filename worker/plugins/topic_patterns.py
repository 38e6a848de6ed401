"""Regular expressions over topic names that a connector config gives (`topics.regex`,
`topic.creation.*.include`/`exclude`), compiled by RE2: they come from REST callers, and
RE2 matches in linear time within a memory budget, so no pattern can stall a worker."""

from __future__ import annotations

from typing import Final

import re2

PATTERN_MEMORY: Final = 1 << 20
"""RE2's memory budget per regex (its default is 8 MB): bounds what a config can make
the worker hold, compiled and while matching."""


def compiled_pattern(pattern: str) -> re2._Regexp:
    """Raises `re2.error` for a pattern RE2 refuses (`pattern_problem` says why)."""
    options = re2.Options()
    options.max_mem = PATTERN_MEMORY
    options.log_errors = False  # RE2 would print the pattern to stderr
    return re2.compile(pattern, options)


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` is no regex these keys take, or None."""
    try:
        compiled_pattern(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else type(exc).__name__
        text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        return (
            f"invalid regular expression {pattern!r}: {text} (RE2 syntax: no lookaround or "
            "backreferences)"
        )
    return None
