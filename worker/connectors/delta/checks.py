"""What `kafka-to-delta` refuses to write, decided from names and columns alone (no
Spark): a batch whose columns the table cannot take, a partition column the batch lacks,
a directory that is not a Delta table. Each refusal names exactly what is at fault,
where Delta's own error would name less (or, for a plain directory, write into it).

Columns are compared as `worker.connectors.table_columns` does, a column taking only
values of its own type (Delta's files keep the type they were written with).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from worker.connectors.table_columns import Column, ColumnDifference

SchemaEvolution = Literal["none", "add-columns"]
EVOLUTION_KEY: Final = "schema.evolution"
PARTITION_KEY: Final = "table.partition.by"
LOG_DIRECTORY: Final = "_delta_log"


def schema_refusal(
    difference: ColumnDifference, evolution: SchemaEvolution, table: str
) -> str | None:
    """Why the batch must not be appended, or None. A type never changes (the table's
    files keep the old one); new columns only under `add-columns`."""
    faults = []
    if difference.added and evolution == "none":
        faults.append("new columns " + ", ".join(f"`{c.name}` {c.type}" for c in difference.added))
    if difference.changed:
        faults.append("changed types " + ", ".join(str(c) for c in difference.changed))
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
