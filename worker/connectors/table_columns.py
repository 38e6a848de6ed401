"""A lakehouse table's columns against those of a batch written into it, compared
without Spark, so that each table sink refuses a batch naming exactly the columns at
fault (the formats' own errors name less).

Columns are matched by name without regard to case, as Spark resolves them, and typed
as Spark spells the type (`DataType.simpleString`: `bigint`, `decimal(10,2)`,
`struct<a:int>`), without nullability, which a table does not keep from a DataFrame. A
struct whose fields change is one changed column. Which batch types a column takes as
they are is the format's rule, given to `compare_columns`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class TypeChange:
    name: str
    table_type: str
    batch_type: str

    def __str__(self) -> str:
        return f"`{self.name}` {self.table_type} in the table, {self.batch_type} in the batch"


@dataclass(frozen=True)
class ColumnDifference:
    """How a batch's columns differ from its table's."""

    added: tuple[Column, ...] = ()
    """In the batch, not in the table."""
    changed: tuple[TypeChange, ...] = ()
    """In both, with a batch type the table's column does not take as it is."""
    absent: tuple[Column, ...] = ()
    """In the table, not in the batch: both sinks append them as nulls."""


def compare_columns(
    table: Sequence[Column],
    batch: Sequence[Column],
    takes: Callable[[str, str], bool] = operator.eq,
) -> ColumnDifference:
    """`takes(batch_type, table_type)`: whether the table's column takes the batch's
    values as they are (by default: only of its own type)."""
    by_name = {column.name.lower(): column for column in table}
    batch_names = {column.name.lower() for column in batch}
    added = tuple(c for c in batch if c.name.lower() not in by_name)
    changed = tuple(
        TypeChange(by_name[c.name.lower()].name, by_name[c.name.lower()].type, c.type)
        for c in batch
        if c.name.lower() in by_name and not takes(c.type, by_name[c.name.lower()].type)
    )
    absent = tuple(c for c in table if c.name.lower() not in batch_names)
    return ColumnDifference(added, changed, absent)


def columns_of(schema: StructType) -> list[Column]:
    return [Column(f.name, f.dataType.simpleString()) for f in schema.fields]
