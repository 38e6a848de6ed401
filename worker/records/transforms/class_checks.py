"""What each class checks when Connect configures it (a Cast spec, a rename mapping, a
field path, which of InsertField's fields are set), made when the config is checked, and
the readings of those settings the transforms are built from.

Each check takes the configured class and the settings as given (before defaults), and
returns its problems by key; the readers are called only on settings a check passed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Final

from worker.plugins.api import ConfigProblem
from worker.records.transforms.date_formats import pattern_problem

if TYPE_CHECKING:
    from worker.records.transforms.config import Configured

CAST_TYPES: Final = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")
DELETE_MODE: Final = "delete.tombstone.handling.mode"
DROP_TOMBSTONES: Final = "drop.tombstones"
DELETE_HANDLING: Final = "delete.handling.mode"
LEGACY_SETTINGS: Final = {"ExtractNewRecordState": (DROP_TOMBSTONES, DELETE_HANDLING)}
"""Settings Debezium 3 removed (and ignores), read as the mode they equal."""
DROP_KEEPING_TOMBSTONES: Final = "drop, keeping tombstones"
TOMBSTONE_KEEPING_TOMBSTONES: Final = "tombstone, keeping tombstones"
LEGACY_MODES: Final = {
    ("true", "drop"): "drop",
    ("true", "none"): "tombstone",
    ("true", "rewrite"): "rewrite",
    ("false", "rewrite"): "rewrite-with-tombstone",
    ("false", "drop"): DROP_KEEPING_TOMBSTONES,
    ("false", "none"): TOMBSTONE_KEEPING_TOMBSTONES,
}
"""`drop.tombstones` and `delete.handling.mode` (Debezium 2's defaults: true, drop) as
the `delete.tombstone.handling.mode` that does the same; the two pairs that keep the
source's tombstones beside `drop` or `none` (the JDBC sinks' hard-delete recipes) have
no mode in Debezium 3, and run as Debezium 2 ran them: the mode's deletes, with every
tombstone kept."""
TRANSACTION_FIELDS: Final = frozenset({"id", "total_order", "data_collection_order"})
TOP_LEVEL_FIELDS: Final = frozenset({"op", "ts_ms", "ts_us", "ts_ns"})

Check = Callable[["Configured", Mapping[str, str]], list[ConfigProblem]]


def cast_spec(items: Sequence[str]) -> dict[str | None, str]:
    """Field (None: the whole key or value) to Connect type name; `ValueError` naming
    the item at fault."""
    casts: dict[str | None, str] = {}
    for item in items:
        parts = item.split(":")
        if len(parts) > 2:
            raise ValueError(f"invalid cast {item!r}: field:type or one type")
        wanted = parts[-1].strip().lower()
        if wanted not in CAST_TYPES:
            raise ValueError(f"invalid type {parts[-1].strip()!r}; types: {', '.join(CAST_TYPES)}")
        casts[parts[0].strip() if len(parts) == 2 else None] = wanted
    if None in casts and len(items) > 1:
        raise ValueError("a cast of the whole key or value must be the spec's only cast")
    return casts


def renames(items: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in items:
        parts = item.split(":")
        if len(parts) != 2:
            raise ValueError(f"invalid rename mapping {item!r}: old:new")
        found[parts[0]] = parts[1]
    return found


def field_path(text: str, version: str) -> list[str]:
    """The steps of a field path: the text itself (V1), or dotted steps with backtick
    quoting (V2), as Connect's SingleFieldPath reads them."""
    if version == "V1":
        return [text]
    steps: list[str] = []
    i = 0
    while 0 <= i < len(text):
        if text[i] != "`":
            end = text.find(".", i)
            steps.append(text[i:] if end < 0 else text[i:end])
            i = -1 if end < 0 else end + 1
            continue
        i, step = _quoted_step(text, i)
        steps.append(step)
    if text.endswith("."):
        steps.append("")
    return steps


def _quoted_step(text: str, opening: int) -> tuple[int, str]:
    """The step a backtick at `opening` starts, and where the next one starts."""
    step: list[str] = []
    start = i = opening + 1
    while True:
        i = text.find("`", i)
        if i < 0:
            raise ValueError(f"an incomplete backtick pair at position {opening} of {text!r}")
        escaped = text[i - 1] == "\\"
        if i >= len(text) - 1:
            if escaped:
                raise ValueError(f"an incomplete backtick pair at position {opening} of {text!r}")
            step.append(text[start:i])
            return len(text), "".join(step)
        if text[i + 1] != ".":
            i += 1
            continue
        if escaped:
            step.append(text[start : i - 1] + "`")
            i += 1
            start = i
            continue
        step.append(text[start:i])
        return i + 2, "".join(step)


def insertion(text: str | None) -> tuple[str, bool] | None:
    """InsertField's `name!` (required) or `name?`/`name` (optional)."""
    if text is None:
        return None
    if text.endswith(("!", "?")):
        return text[:-1], text.endswith("?")
    return text, True


@dataclass(frozen=True)
class EventField:
    """A field of a Debezium change event that `add.fields`/`add.headers` names."""

    struct: str | None
    """`source`, `transaction`, `updateDescription`, or None for `op`, `ts_ms`..."""
    field: str
    name: str
    """The added field's or header's name, prefix included."""


def event_fields(prefix: str, items: Sequence[str]) -> list[EventField]:
    found = []
    for item in items:
        parts = item.split(":")
        if len(parts) > 2:
            raise ValueError(f"unexpected field name {item!r}: field, struct.field or field:name")
        steps = parts[0].split(".")
        simple = steps[0] if len(steps) == 1 else steps[1]
        struct = _event_struct(simple) if len(steps) == 1 else steps[0]
        if len(parts) == 2:
            name = prefix + parts[1]
        else:
            name = prefix + (simple if len(steps) == 1 else f"{struct}_{simple}")
        found.append(EventField(struct, simple, name))
    return found


def _event_struct(simple: str) -> str | None:
    if simple in TRANSACTION_FIELDS:
        return "transaction"
    if simple in TOP_LEVEL_FIELDS:
        return None
    return "updateDescription" if simple == "updateDescription" else "source"


def delete_mode(configured: Configured) -> str:
    """The mode ExtractNewRecordState runs in: its `delete.tombstone.handling.mode`, or
    the one Debezium 2's legacy pair equals (`ValueError` for a pair with none)."""
    legacy = (configured.text(DROP_TOMBSTONES), configured.text(DELETE_HANDLING))
    if legacy == (None, None):
        return configured.text(DELETE_MODE) or "tombstone"
    pair = ((legacy[0] or "true").strip().lower(), (legacy[1] or "drop").strip().lower())
    mode = LEGACY_MODES.get(pair)
    if mode is None:
        raise ValueError(
            f"{DROP_TOMBSTONES}={pair[0]} with {DELETE_HANDLING}={pair[1]} has no "
            f"equal in Debezium 3, which removed both settings: set {DELETE_MODE} "
            "(drop, tombstone, rewrite, rewrite-with-tombstone or delete-to-tombstone)"
        )
    return mode


def _problem(configured: Configured, name: str, read: Callable[[], object]) -> list[ConfigProblem]:
    try:
        read()
    except ValueError as exc:
        return [ConfigProblem(configured.key(name), str(exc))]
    return []


def _cast(configured: Configured, given: Mapping[str, str]) -> list[ConfigProblem]:
    return _problem(configured, "spec", lambda: cast_spec(configured.items("spec")))


def _replace(configured: Configured, given: Mapping[str, str]) -> list[ConfigProblem]:
    return _problem(configured, "renames", lambda: renames(configured.items("renames")))


def _extract(configured: Configured, given: Mapping[str, str]) -> list[ConfigProblem]:
    version = configured.text("field.syntax.version") or "V1"
    return _problem(
        configured, "field", lambda: field_path(configured.text("field") or "", version)
    )


def _header_from(configured: Configured, given: Mapping[str, str]) -> list[ConfigProblem]:
    if len(configured.items("fields")) == len(configured.items("headers")):
        return []
    return [ConfigProblem(configured.key("headers"), "must have as many elements as fields")]


def _insert(configured: Configured, given: Mapping[str, str]) -> list[ConfigProblem]:
    names = ("topic.field", "partition.field", "offset.field", "timestamp.field", "static.field")
    if not any(configured.text(name) for name in names):
        return [ConfigProblem(configured.key("topic.field"), "no field insertion configured")]
    if configured.text("static.field") and configured.text("static.value") is None:
        return [ConfigProblem(configured.key("static.value"), "missing: static.field needs it")]
    return []


def _metadata(configured: Configured, given: Mapping[str, str]) -> list[ConfigProblem]:
    if configured.text("schema.name") is None and configured.number("schema.version") is None:
        return [ConfigProblem(configured.key("schema.name"), "neither schema name nor version")]
    return []


def _timestamp_converter(configured: Configured, given: Mapping[str, str]) -> list[ConfigProblem]:
    target = configured.text("target.type")
    pattern = configured.text("format") or ""
    if target == "Time":
        return [
            ConfigProblem(
                configured.key("target.type"),
                "Time is not supported: Spark has no time-of-day type to hold one",
            )
        ]
    if target == "string" and not pattern.strip():
        return [ConfigProblem(configured.key("format"), "required with target.type=string")]
    problem = pattern_problem(pattern) if pattern.strip() else None
    return [] if problem is None else [ConfigProblem(configured.key("format"), problem)]


def _timestamp_router(configured: Configured, given: Mapping[str, str]) -> list[ConfigProblem]:
    problem = pattern_problem(configured.text("timestamp.format") or "")
    return [] if problem is None else [ConfigProblem(configured.key("timestamp.format"), problem)]


def _extract_new_record_state(
    configured: Configured, given: Mapping[str, str]
) -> list[ConfigProblem]:
    problems = _problem(configured, DELETE_MODE, lambda: delete_mode(configured))
    if problems and DELETE_MODE not in given:
        key = DROP_TOMBSTONES if DROP_TOMBSTONES in given else DELETE_HANDLING
        problems = [ConfigProblem(configured.key(key), problems[0].message)]
    elif DELETE_MODE in given and any(name in given for name in LEGACY_SETTINGS[configured.family]):
        problems.append(
            ConfigProblem(
                configured.key(DROP_TOMBSTONES if DROP_TOMBSTONES in given else DELETE_HANDLING),
                f"removed in Debezium 3: give {DELETE_MODE} alone",
            )
        )
    if configured.text("drop.fields.header.name"):
        problems.append(
            ConfigProblem(configured.key("drop.fields.header.name"), "not supported by this worker")
        )
    for name in ("add.fields", "add.headers"):
        prefix = configured.text(f"{name}.prefix") or ""
        problems += _problem(
            configured, name, partial(event_fields, prefix, configured.items(name))
        )
    return problems


CLASS_CHECKS: Final[Mapping[str, Check]] = {
    "Cast": _cast,
    "ReplaceField": _replace,
    "ExtractField": _extract,
    "HeaderFrom": _header_from,
    "InsertField": _insert,
    "SetSchemaMetadata": _metadata,
    "TimestampConverter": _timestamp_converter,
    "TimestampRouter": _timestamp_router,
    "ExtractNewRecordState": _extract_new_record_state,
}
