"""What `kafka-to-delta` refuses to write, decided from names and columns alone (no
Spark): a batch whose columns the table cannot take, a partition column the batch lacks,
a directory that is not a Delta table. Each refusal names exactly what is at fault,
where Delta's own error would name less (or, for a plain directory, write into it).

Columns are compared by name without regard to case, as Spark and Delta resolve them,
and by type as Spark spells it (`simpleString`: `bigint`, `struct<a:int>`), without
nullability, which a lakehouse table does not keep from a DataFrame. A struct column
whose fields change is one changed column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

SchemaEvolution = Literal["none", "add-columns"]
EVOLUTION_KEY: Final = "schema.evolution"
PARTITION_KEY: Final = "table.partition.by"
LOG_DIRECTORY: Final = "_delta_log"


@dataclass(frozen=True)
class Column:
    name: str
    type: str


@dataclass(frozen=True)
class TypeChange:
    name: str
    table_type: str
    batch_type: str


@dataclass(frozen=True)
class SchemaDifference:
    """How a batch's columns differ from its table's."""

    new: tuple[Column, ...] = ()
    """In the batch, not in the table."""
    changed: tuple[TypeChange, ...] = ()
    """In both, with another type."""
    missing: tuple[Column, ...] = ()
    """In the table, not in the batch: appended as nulls, whatever the evolution."""


def schema_difference(table: Sequence[Column], batch: Sequence[Column]) -> SchemaDifference:
    by_name = {column.name.lower(): column for column in table}
    batch_names = {column.name.lower() for column in batch}
    new = tuple(c for c in batch if c.name.lower() not in by_name)
    changed = tuple(
        TypeChange(c.name, by_name[c.name.lower()].type, c.type)
        for c in batch
        if c.name.lower() in by_name and by_name[c.name.lower()].type != c.type
    )
    missing = tuple(c for c in table if c.name.lower() not in batch_names)
    return SchemaDifference(new, changed, missing)


def schema_refusal(
    difference: SchemaDifference, evolution: SchemaEvolution, table: str
) -> str | None:
    """Why the batch must not be appended, or None. A type never changes (the table's
    files keep the old one); new columns only under `add-columns`."""
    faults = []
    if difference.new and evolution == "none":
        faults.append("new columns " + ", ".join(f"`{c.name}` {c.type}" for c in difference.new))
    if difference.changed:
        faults.append(
            "changed types "
            + ", ".join(
                f"`{c.name}` {c.table_type} in the table, {c.batch_type} in the batch"
                for c in difference.changed
            )
        )
    if not faults:
        return None
    advice = (
        f"with {EVOLUTION_KEY}=none a batch must keep the table's columns and types; "
        f"{EVOLUTION_KEY}=add-columns adds new columns"
        if evolution == "none"
        else "a column's type cannot change, even with add-columns"
    )
    return (
        f"The batch's columns differ from those of the table {table}: {'; '.join(faults)} "
        f"({advice}; change transform.sql, or write to a new table)"
    )


def missing_partition_columns(partition_by: Sequence[str], batch: Sequence[Column]) -> str | None:
    """Why the batch cannot be partitioned as configured, or None."""
    names = {column.name.lower() for column in batch}
    absent = [name for name in partition_by if name.lower() not in names]
    if not absent:
        return None
    return (
        f"{PARTITION_KEY} names {', '.join(f'`{n}`' for n in absent)}, which the batch does "
        f"not have (its columns: {', '.join(c.name for c in batch)}); change "
        f"{PARTITION_KEY} or transform.sql"
    )


def plain_directory_refusal(table: str, entries: Sequence[str] | None) -> str | None:
    """Why `table` must not be written: it holds files but no Delta log (Delta would
    make a table of it, beside files that are not its own). `entries`: its names, None
    when it does not exist, [] when it is an empty directory."""
    if not entries or LOG_DIRECTORY in entries:
        return None
    shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
    return (
        f"table.path {table} is not a Delta table: it holds files ({shown}) but no "
        f"{LOG_DIRECTORY}, and nothing is written into it; name an empty or new "
        "directory, or an existing Delta table"
    )
