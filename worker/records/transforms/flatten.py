"""Flatten: the fields of nested structs lifted to the top, their names joined with
`delimiter` (`address.city`); arrays stay as they are. Connect refuses a map inside a
schema'd struct and flattens one without a schema by its keys; a Spark map has keys
known only per record, so it is refused either way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.types import MapType, StructType

from worker.records.transforms.config import Configured
from worker.records.transforms.fields import rebuilt, unique_names
from worker.records.transforms.record import (
    ChainContext,
    ChainProblem,
    Change,
    Record,
    on,
    side,
    struct_of,
)

if TYPE_CHECKING:
    from pyspark.sql import Column


def flatten(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    struct = struct_of(configured, record, part)
    delimiter = configured.text("delimiter") or ""
    fields = _flattened(configured, f.col(part), struct, "", delimiter)
    unique_names(configured, [name for name, _ in fields], "delimiter")
    return on(part, rebuilt(part, [column.alias(name) for name, column in fields]))


def _flattened(
    configured: Configured, column: Column, struct: StructType, prefix: str, delimiter: str
) -> list[tuple[str, Column]]:
    found: list[tuple[str, Column]] = []
    for field in struct.fields:
        name = f"{prefix}{delimiter}{field.name}" if prefix else field.name
        if isinstance(field.dataType, StructType):
            found += _flattened(configured, column[field.name], field.dataType, name, delimiter)
        elif isinstance(field.dataType, MapType):
            raise ChainProblem(
                configured.key("type"),
                f"Flatten does not flatten the map field {name!r} (its keys are known "
                "only per record)",
            )
        else:
            found.append((name, column[field.name]))
    return found
