"""Whether a batch's columns fit its Iceberg table, and what evolving the table means.

Columns are compared as `worker.connectors.table_columns` does. A batch may lack a
table column (it is written as null) and may hold a narrower type than the table's
(Spark widens it on write: `int` into `bigint`). A column the table lacks, or a type the
table cannot take, is a change: refused unless `iceberg.tables.evolve-schema-enabled`,
which adds the column, or widens the table's type where Iceberg allows it (`int` to
`bigint`, `float` to `double`, a decimal's precision up at the same scale). Other type
changes, and changes inside a struct, are refused either way, naming the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from worker.connectors.table_columns import Column, TypeChange, compare_columns

_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_INTEGERS: Final = ("tinyint", "smallint", "int", "bigint")
STORED_AS: Final = {"tinyint": "int", "smallint": "int"}
"""Iceberg has no byte or short: Spark's table shows them as int."""


@dataclass(frozen=True)
class SchemaDiff:
    added: tuple[Column, ...] = ()
    """Columns the table lacks."""
    widened: tuple[TypeChange, ...] = ()
    """Columns whose batch type is wider than the table's, in a way Iceberg can evolve."""
    incompatible: tuple[TypeChange, ...] = ()
    """Columns whose batch type the table can take neither as it is nor widened."""
    absent: tuple[Column, ...] = ()
    """Table columns the batch lacks: written as null."""

    @property
    def changes(self) -> bool:
        return bool(self.added or self.widened or self.incompatible)


def writable(batch_type: str, table_type: str) -> bool:
    """Whether Spark writes a value of `batch_type` into a `table_type` column as it is."""
    batch_type = STORED_AS.get(batch_type, batch_type)
    if batch_type == table_type:
        return True
    if batch_type in _INTEGERS and table_type in _INTEGERS:
        return _INTEGERS.index(batch_type) <= _INTEGERS.index(table_type)
    if (batch_type, table_type) == ("float", "double"):
        return True
    return _decimal_widens(batch_type, table_type)


def evolvable(table_type: str, batch_type: str) -> bool:
    """Whether Iceberg can widen the table's `table_type` column to `batch_type`."""
    batch_type = STORED_AS.get(batch_type, batch_type)
    return (table_type, batch_type) in {("int", "bigint"), ("float", "double")} or (
        _decimal_widens(table_type, batch_type)
    )


def _decimal_widens(narrow: str, wide: str) -> bool:
    a, b = _DECIMAL.fullmatch(narrow), _DECIMAL.fullmatch(wide)
    return bool(a and b and a[2] == b[2] and int(a[1]) <= int(b[1]))


def compare(table: list[Column], batch: list[Column]) -> SchemaDiff:
    difference = compare_columns(table, batch, writable)
    widened = tuple(c for c in difference.changed if evolvable(c.table_type, c.batch_type))
    incompatible = tuple(c for c in difference.changed if c not in widened)
    return SchemaDiff(difference.added, widened, incompatible, difference.absent)


EVOLVE_KEY: Final = "iceberg.tables.evolve-schema-enabled"


def schema_problem(diff: SchemaDiff, table: str, evolve: bool) -> str | None:
    """Why the batch cannot be written into `table` under `evolve`, or None."""
    if diff.incompatible:
        changes = ", ".join(str(c) for c in diff.incompatible)
        return (
            f"Columns of table {table} changed type in a way Iceberg cannot evolve: {changes}. "
            "Cast them in transform.sql, or write to a new table"
        )
    if evolve or not diff.changes:
        return None
    parts = []
    if diff.added:
        parts.append("new columns " + ", ".join(f"{c.name} {c.type}" for c in diff.added))
    if diff.widened:
        parts.append("wider types " + ", ".join(str(c) for c in diff.widened))
    return (
        f"The batch does not fit table {table}: {'; '.join(parts)}. Set {EVOLVE_KEY}=true "
        "to evolve the table, or shape the rows with transform.sql"
    )
