"""What an Avro schema promises about a decoded value, so that a payload Avro could not
read can be told from a value that is legitimately null.

Spark's `from_avro` in PERMISSIVE mode answers a payload it cannot read with null, or,
for a record, with a record whose every field is null. A record with a field that can
never be null (its type is no union with `"null"`) therefore betrays a failed read; so
does a null for a type that can never be null. Where nothing can betray it (a record of
optional fields only, or a nullable union at the top), decoding must fail fast instead
of marking: never a silent record of nulls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from worker.records.nesting import json_nesting_problem


@dataclass(frozen=True)
class FailureSign:
    """How a failed read shows: `whole_null` (a null for a type that is never null) and
    the record fields that are null only after a failed read. `detectable` false: no
    sign exists, decode in FAILFAST mode."""

    whole_null: bool
    required_fields: tuple[str, ...]

    @property
    def detectable(self) -> bool:
        return self.whole_null or bool(self.required_fields)


def failure_sign(schema: str) -> FailureSign:
    """`schema` is JSON already checked by `avro_json_problem`."""
    parsed: Any = json.loads(schema)
    if _nullable(parsed):
        return FailureSign(whole_null=False, required_fields=())
    if isinstance(parsed, dict) and parsed.get("type") == "record":
        required = tuple(
            str(field["name"])
            for field in parsed.get("fields", [])
            if isinstance(field, dict) and "name" in field and not _nullable(field.get("type"))
        )
        # PERMISSIVE answers a record it cannot read with a record of nulls, never null.
        return FailureSign(whole_null=False, required_fields=required)
    return FailureSign(whole_null=True, required_fields=())


def _nullable(avro_type: Any) -> bool:
    if isinstance(avro_type, list):
        return any(_nullable(branch) for branch in avro_type)
    if isinstance(avro_type, dict):
        return _nullable(avro_type.get("type"))
    return bool(avro_type == "null")


def avro_json_problem(schema: str) -> str | None:
    """What keeps `schema` from being an Avro schema at all (it is JSON: a type name,
    an object with a `type`, or a union list), before Avro's own parser judges it."""
    if (too_deep := json_nesting_problem(schema)) is not None:
        return too_deep
    try:
        parsed = json.loads(schema)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if isinstance(parsed, dict) and "type" not in parsed:
        return "an Avro schema object needs a 'type'"
    if not isinstance(parsed, dict | list | str):
        return "an Avro schema is a type name, an object with a 'type', or a union list"
    return None
