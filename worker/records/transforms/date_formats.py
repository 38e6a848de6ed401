"""`java.text.SimpleDateFormat` patterns (what TimestampConverter's `format` and
TimestampRouter's `timestamp.format` take) as Spark's datetime patterns, for the patterns
whose letters mean the same in both.

Connect formats in UTC; Spark formats a timestamp in the session's time zone. The chain
therefore formats the UTC wall clock (a TIMESTAMP_NTZ), where a zone letter has no zone
to print: `z`, `Z` and `X` become the text SimpleDateFormat prints for UTC (`UTC`,
`+0000`, `Z`). A pattern with a letter whose meaning differs (`S` alone is milliseconds
in SimpleDateFormat and tenths in Spark, `u`, `Y`, `w`, `W`, `F`...) is refused
naming the letter, not run with another meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SAME_LETTERS: Final = frozenset("GyMdHhkKmsEaD")
"""Letters whose runs mean the same in SimpleDateFormat and Spark (any run length)."""
UTC_TEXT: Final = {"z": "'UTC'", "Z": "'+0000'", "X": "'Z'"}
"""What SimpleDateFormat prints for UTC, per zone letter run of up to three."""
SPARK_RESERVED: Final = frozenset("[]{}#")
"""Characters Spark's formatter reads as pattern syntax where SimpleDateFormat prints
them: quoted in the translation."""


@dataclass(frozen=True)
class SparkPattern:
    pattern: str
    """The pattern that writes the UTC wall clock (zone letters as UTC's text)."""
    zoned: bool
    """The SimpleDateFormat pattern names a zone: a string it reads says its own zone."""
    reading: str
    """The pattern that reads a string, zone letters kept: the string says its zone."""


class UnsupportedPatternError(ValueError):
    """A SimpleDateFormat pattern Spark cannot read or write the same way."""


def spark_pattern(simple: str) -> SparkPattern:
    """The Spark pattern that writes what `simple` writes in UTC."""
    out: list[str] = []
    reading: list[str] = []
    zoned = False
    i = 0
    while i < len(simple):
        char = simple[i]
        if char == "'":
            end = _quote_end(simple, i)
            out.append(simple[i : end + 1])
            reading.append(simple[i : end + 1])
            i = end + 1
            continue
        run = len(simple[i:]) - len(simple[i:].lstrip(char))
        if char.isascii() and char.isalpha():
            out.append(_letters(char, run))
            zoned = zoned or char in UTC_TEXT
            reading.append(char * run if char in UTC_TEXT else out[-1])
        elif char in SPARK_RESERVED:
            out.append(f"'{char * run}'")
            reading.append(out[-1])
        else:
            out.append(char * run)
            reading.append(out[-1])
        i += run
    return SparkPattern("".join(out), zoned, "".join(reading))


def pattern_problem(simple: str) -> str | None:
    try:
        spark_pattern(simple)
    except UnsupportedPatternError as exc:
        return str(exc)
    return None


def _letters(char: str, run: int) -> str:
    if char in SAME_LETTERS:
        return char * run
    if char == "S" and run == 3:
        return "SSS"
    if char in UTC_TEXT and run <= 3:
        return UTC_TEXT[char]
    raise UnsupportedPatternError(
        f"the pattern letter {char * run!r} is not one this worker writes as "
        "SimpleDateFormat does (supported: G y M d H h k K m s SSS E a D z Z X, quoted text)"
    )


def _quote_end(simple: str, start: int) -> int:
    """The index of the quote that closes the one at `start` (`''` is a quote inside)."""
    i = start + 1
    while i < len(simple):
        if simple[i] == "'":
            if i + 1 < len(simple) and simple[i + 1] == "'":
                i += 2
                continue
            return i
        i += 1
    raise UnsupportedPatternError(f"an unterminated quote at position {start}")
