"""How deep a structure that a REST caller hands the worker may nest.

Request bodies, Avro schemas, Connect's JSON envelope schemas and Spark DDL all reach code
that walks them recursively: Python's JSON parser, pyspark's conversions of a Spark type,
spark-avro and Spark's parser on the JVM. Each gives up at a depth of its own and in a way
of its own (a RecursionError, a StackOverflowError, a 500 naming neither the key nor the
cause), and where Python's limit falls depends on how deep the caller's stack already is.
So each such input is measured first, without recursion, against one bound, and a deeper
one is refused with a message naming its key and the bound.

The measures count what the text nests, so they need no parse: every JSON object or array
is a level (strings skipped), and so is every `<...>` of a DDL (strings, quoted
identifiers and comments skipped, as Spark's own lexer skips them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from itertools import accumulate
from typing import Final

MAX_NESTING: Final = 100
"""The deepest a schema or a body may nest, in levels as this module counts them.

What the others allow: Jackson, under Avro's Java parser and Connect's JsonConverter,
refuses JSON nested deeper than 1,000 levels; Spark sets no bound, but its DDL parser and
pyspark's conversion of a parsed type fail at about 250 nested structs, where a struct
costs four Python frames of the 1,000 Python allows, part of them taken by the caller;
protobuf's parser stops at 100. At 100 levels the deepest walk here takes under half of
Python's frames, whatever called it, and no real schema comes near: an Avro record
nested in another takes three levels, so 100 levels hold 33 nested records, a Connect
struct two, and a DDL's `STRUCT<...>` one."""

_JSON_LEVELS: Final = "each JSON object or array is a level"
_DDL_LEVELS: Final = "each <...> is a level"

_JSON_SKIPPED: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[^\[\]{}"]+', re.DOTALL)
"""Strings (an unclosed one runs to the end, so no text is scanned twice) and whatever is
no bracket: what is left after removing them is the brackets alone."""
_JSON_STEPS: Final = {"[": 1, "{": 1, "]": -1, "}": -1}

_DDL_MARK: Final = re.compile(r"""[<>`'"]|--|/\*(?!\+)|(?<!\w)[rR]['"]""")
"""What a DDL scan stops at: a bracket, or the start of a token of Spark's lexer whose
text is no part of the DDL's structure: a quoted identifier, a string, a raw string
(`r'...'`, where `r` starts a token), a comment (`/*+` opens a hint, not a comment)."""
_DDL_SKIPS: Final = {
    "`": re.compile(r"[^`]*(?:``[^`]*)*`?"),
    "'": re.compile(r"[^'\\]*(?:\\.[^'\\]*)*'?", re.DOTALL),
    '"': re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL),
    "r'": re.compile(r"[^']*'?"),
    'r"': re.compile(r'[^"]*"?'),
    "--": re.compile(r"(?:\\\n|[^\r\n])*"),
}
"""Where each such token runs to from its opener (one left open, to the end); a `--`
comment goes on past a newline escaped with a backslash, as Spark's does."""
_COMMENT_MARK: Final = re.compile(r"/\*(?!\+)|\*/")


def _too_deep(levels: str) -> str:
    """The message of every check: the key comes before it."""
    return f"nested more than {MAX_NESTING} levels deep ({levels})"


def json_nesting_problem(text: str | bytes) -> str | None:
    """Why JSON `text` nests too deep for the worker, or None. Bytes are read in the
    encoding `json.loads` would detect; bytes that are no text at all are no JSON, and
    left to the parser to refuse."""
    if isinstance(text, bytes):
        try:
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        except UnicodeDecodeError:
            return None
    brackets = _JSON_SKIPPED.sub("", text)
    depth = max(accumulate(map(_JSON_STEPS.__getitem__, brackets)), default=0)
    return _too_deep(_JSON_LEVELS) if depth > MAX_NESTING else None


def value_nesting_problem(value: object) -> str | None:
    """Why a parsed JSON value nests too deep, counted as `json_nesting_problem` counts
    its text, or None."""
    depth, level = 0, [value]
    while level := [item for item in level if isinstance(item, Mapping | list)]:
        depth += 1
        if depth > MAX_NESTING:
            return _too_deep(_JSON_LEVELS)
        level = [
            inner
            for item in level
            for inner in (item.values() if isinstance(item, Mapping) else item)
        ]
    return None


def ddl_nesting_problem(text: str) -> str | None:
    """Why a Spark DDL (`id LONG, tags ARRAY<STRING>`) nests too deep, or None."""
    depth = 0
    for step in _ddl_steps(text):
        depth = max(depth + step, 0)
        if depth > MAX_NESTING:
            return _too_deep(_DDL_LEVELS)
    return None


def _ddl_steps(text: str) -> Iterator[int]:
    position = 0
    while (mark := _DDL_MARK.search(text, position)) is not None:
        token, position = mark.group(), mark.end()
        if token in ("<", ">"):
            yield 1 if token == "<" else -1
        elif token == "/*":
            position = _comment_end(text, position)
        else:
            skipped = _DDL_SKIPS[token.lower()].match(text, position)
            assert skipped is not None  # each matches the empty text
            position = skipped.end()


def _comment_end(text: str, position: int) -> int:
    """Where a `/* ... */` comment that opened before `position` ends: comments nest in
    Spark's SQL, and one left open runs to the end."""
    open_comments = 1
    while open_comments and (mark := _COMMENT_MARK.search(text, position)) is not None:
        open_comments += 1 if mark.group() == "/*" else -1
        position = mark.end()
    return position if not open_comments else len(text)
