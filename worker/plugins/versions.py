"""Plugin versions and the version requirements a config may give them (KIP-891).

Kafka Connect 4.1 reads `connector.plugin.version` (and a converter's
`*.converter.plugin.version`) as a Maven version range: `4.1.1` asks for exactly that
version, `[4.0,5.0)` for any in the range, `latest` for whichever is installed. A worker
here has one installed version of each plugin, so a requirement either admits it or the
config is refused naming the key; the ordering of versions and the range syntax are
Maven's (`org.apache.maven.artifact.versioning`, which Connect uses), so that a range
written for Connect admits here the versions it admits there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import total_ordering
from typing import Final

LATEST: Final = "latest"
"""The requirement that admits whatever version is installed."""

_Item = int | str | list["_Item"]
_QUALIFIERS: Final = ("alpha", "beta", "milestone", "rc", "snapshot", "", "sp")
"""Maven's known qualifiers, oldest first; "" is a release. Any other qualifier sorts
after them all, by its text."""
_ALIASES: Final = {"ga": "", "final": "", "release": "", "cr": "rc"}
_ONE_LETTER: Final = {"a": "alpha", "b": "beta", "m": "milestone"}
"""`1.0a1` is `1.0-alpha-1`: a single letter right before a digit."""


class VersionSpecError(ValueError):
    """A requirement that is no Maven version range (`[1.0`, `(1.0)`)."""


def _qualifier_rank(qualifier: str) -> tuple[int, str]:
    if qualifier in _QUALIFIERS:
        return _QUALIFIERS.index(qualifier), ""
    return len(_QUALIFIERS), qualifier


_RELEASE: Final = _qualifier_rank("")


def _compare(left: _Item | None, right: _Item | None) -> int:
    """Maven's item order: a number beats a qualifier and a sub-list, a sub-list beats a
    qualifier, a missing item is a release (0, "", or an empty list)."""
    if left is None:
        return 0 if right is None else -_compare(right, None)
    if isinstance(left, int):
        if right is None:
            return 0 if left == 0 else 1
        if isinstance(right, int):
            return (left > right) - (left < right)
        return 1
    if isinstance(left, str):
        rank = _qualifier_rank(left)
        if right is None:
            return (rank > _RELEASE) - (rank < _RELEASE)
        if isinstance(right, str):
            other = _qualifier_rank(right)
            return (rank > other) - (rank < other)
        return -1
    if right is None:
        return next((result for item in left if (result := _compare(item, None))), 0)
    if isinstance(right, int):
        return -1
    if isinstance(right, str):
        return 1
    for index in range(max(len(left), len(right))):
        mine = left[index] if index < len(left) else None
        theirs = right[index] if index < len(right) else None
        if result := _compare(mine, theirs):
            return result
    return 0


def _is_null(item: _Item) -> bool:
    if isinstance(item, int):
        return item == 0
    if isinstance(item, str):
        return _qualifier_rank(item) == _RELEASE
    return not item


def _normalized(items: list[_Item]) -> list[_Item]:
    """Without trailing null items (`1.0.0` is `1`), looking past trailing sub-lists."""
    kept = list(items)
    for index in range(len(kept) - 1, -1, -1):
        if _is_null(kept[index]):
            del kept[index]
        elif not isinstance(kept[index], list):
            break
    return kept


def _parse(text: str) -> list[_Item]:
    """The item tree of a version, as Maven builds it: `.` separates items; `-`, and a
    switch from digits to letters or back, opens a sub-list; trailing null items go."""
    version = text.lower()
    stack: list[list[_Item]] = [[]]
    start = 0
    in_digits = False

    def open_sub_list() -> None:
        sub: list[_Item] = []
        stack[-1].append(sub)
        stack.append(sub)

    for index, char in enumerate(version):
        if char in ".-":
            stack[-1].append(0 if index == start else _item(in_digits, version[start:index]))
            start = index + 1
            if char == "-":
                open_sub_list()
        elif char.isdecimal():
            if not in_digits and index > start:
                if stack[-1]:
                    open_sub_list()
                stack[-1].append(_word(version[start:index], followed_by_digit=True))
                start = index
                open_sub_list()
            in_digits = True
        else:
            if in_digits and index > start:
                stack[-1].append(_item(True, version[start:index]))
                start = index
                open_sub_list()
            in_digits = False
    if len(version) > start:
        if not in_digits and stack[-1]:
            open_sub_list()
        stack[-1].append(_item(in_digits, version[start:]))
    for level in reversed(stack):
        level[:] = _normalized(level)
    return stack[0]


def _item(digits: bool, text: str) -> _Item:
    return int(text) if digits else _word(text, followed_by_digit=False)


def _word(text: str, *, followed_by_digit: bool) -> str:
    word = _ONE_LETTER.get(text, text) if followed_by_digit else text
    return _ALIASES.get(word, word)


@total_ordering
@dataclass(frozen=True, eq=False)
class PluginVersion:
    """A version compared as Maven compares them (`1.0` = `1.0.0` = `1-ga` < `1.1-alpha-1`)."""

    text: str

    def _items(self) -> list[_Item]:
        return _parse(self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PluginVersion) and _compare(self._items(), other._items()) == 0

    def __lt__(self, other: PluginVersion) -> bool:
        return _compare(self._items(), other._items()) < 0

    def __hash__(self) -> int:
        return hash(repr(self._items()))

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Bounds:
    """One interval of a range; None is unbounded on that side."""

    lower: PluginVersion | None
    lower_inclusive: bool
    upper: PluginVersion | None
    upper_inclusive: bool

    def admits(self, version: PluginVersion) -> bool:
        if self.lower is not None and (
            version < self.lower or (version == self.lower and not self.lower_inclusive)
        ):
            return False
        return self.upper is None or not (
            version > self.upper or (version == self.upper and not self.upper_inclusive)
        )

    def __str__(self) -> str:
        lower = "" if self.lower is None else str(self.lower)
        upper = "" if self.upper is None else str(self.upper)
        opening = "[" if self.lower_inclusive else "("
        closing = "]" if self.upper_inclusive else ")"
        return f"{opening}{lower},{upper}{closing}"


@dataclass(frozen=True)
class VersionRequirement:
    """The versions a `*.plugin.version` value admits: one or more intervals."""

    intervals: tuple[Bounds, ...]

    def admits(self, version: str) -> bool:
        wanted = PluginVersion(version)
        return any(bounds.admits(wanted) for bounds in self.intervals)

    def __str__(self) -> str:
        return ",".join(str(bounds) for bounds in self.intervals)


def version_requirement(spec: str) -> VersionRequirement | None:
    """What `spec` admits: None for `latest` (anything installed); a plain version admits
    exactly itself, as Connect reads it (Maven would take it as a mere recommendation).
    Raises `VersionSpecError` for a spec that is no Maven version range."""
    text = spec.strip()
    if text == LATEST:
        return None
    if not text:
        raise VersionSpecError("empty: give a version (4.1.1), a range ([4.0,5.0)) or latest")
    bracketed = text if text.startswith(("[", "(")) else f"[{text}]"
    return VersionRequirement(_intervals(spec, bracketed))


def _intervals(spec: str, text: str) -> tuple[Bounds, ...]:
    intervals: list[Bounds] = []
    rest = text
    while rest.startswith(("[", "(")):
        ends = [index for index in (rest.find("]"), rest.find(")")) if index >= 0]
        if not ends:
            raise VersionSpecError(f"Unbounded range: {spec}")
        end = min(ends)
        bounds = _bounds(rest[: end + 1])
        if intervals and (
            bounds.lower is None
            or intervals[-1].upper is None
            or bounds.lower < intervals[-1].upper
        ):
            raise VersionSpecError(f"Ranges overlap: {spec}")
        intervals.append(bounds)
        rest = rest[end + 1 :].strip().removeprefix(",").strip()
    if rest:
        raise VersionSpecError(
            f"Only fully-qualified sets allowed in multiple set scenario: {spec}"
        )
    return tuple(intervals)


def _bounds(interval: str) -> Bounds:
    lower_inclusive = interval.startswith("[")
    upper_inclusive = interval.endswith("]")
    inside = interval[1:-1].strip()
    if "," not in inside:
        if not (lower_inclusive and upper_inclusive):
            raise VersionSpecError(f"Single version must be surrounded by []: {interval}")
        version = PluginVersion(inside)
        return Bounds(version, True, version, True)
    low_text, _, high_text = inside.partition(",")
    lower = PluginVersion(low_text.strip()) if low_text.strip() else None
    upper = PluginVersion(high_text.strip()) if high_text.strip() else None
    if (
        lower is not None
        and upper is not None
        and (upper < lower or (upper == lower and not (lower_inclusive and upper_inclusive)))
    ):
        raise VersionSpecError(f"Range defies version ordering: {interval}")
    return Bounds(lower, lower_inclusive, upper, upper_inclusive)


def version_problem(spec: str, what: str, installed: str | None) -> str | None:
    """Why `spec` does not admit the `installed` version of `what` (`Plugin <class>`, say);
    None if it does."""
    try:
        requirement = version_requirement(spec)
    except VersionSpecError as exc:
        return f"invalid version requirement {spec!r}: {exc}"
    if requirement is None:
        return None
    if installed is None:
        return f"{what} has no known version, so no version requirement can be met"
    if requirement.admits(installed):
        return None
    return (
        f"{what} has version {installed} which does not match the required version range "
        f"{requirement}; this worker has no other version of it"
    )
