"""Lakehouse tables read back by readers that are not Spark: delta-rs (`deltalake`) for
Delta Lake, pyiceberg for Iceberg's hadoop catalog. A sink test that read its table
with the Spark that wrote it would share its bugs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from pyiceberg.table import StaticTable, Table


def delta_rows(table: Path) -> list[dict[str, Any]]:
    """Every row of the table's newest version; none before its first commit."""
    try:
        found: list[dict[str, Any]] = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    except TableNotFoundError:
        return []
    return found


def iceberg_hadoop_table(warehouse: Path, name: str) -> Table | None:
    """The table `namespace.table` at its newest metadata file, as Iceberg's hadoop
    catalog finds it (the version hint is written after it, and may lag); None before
    the table exists."""
    metadata = warehouse.joinpath(*name.split("."), "metadata")
    versions = [int(p.name[1:].split(".")[0]) for p in metadata.glob("v*.metadata.json")]
    if not versions:
        return None
    return StaticTable.from_metadata(str(metadata / f"v{max(versions)}.metadata.json"))


def iceberg_rows(warehouse: Path, name: str) -> list[dict[str, Any]]:
    """Every row of the table's current snapshot; none before the table exists."""
    table = iceberg_hadoop_table(warehouse, name)
    found: list[dict[str, Any]] = [] if table is None else table.scan().to_arrow().to_pylist()
    return found


def keyed_once(rows: list[dict[str, Any]], count: int) -> str | None:
    """None when the rows are records `key-0` .. `key-<count-1>` (`tests.support.
    kafka_topics.keyed`) each once, from distinct Kafka positions; else what is wrong."""
    keys = sorted(int(str(row["key"]).removeprefix("key-")) for row in rows)
    places = {(row["partition"], row["offset"]) for row in rows}
    if keys == list(range(count)) and len(places) == count:
        return None
    doubled = len(keys) - len(set(keys))
    lost = count - len(set(keys) & set(range(count)))
    return f"{len(rows)} rows for {count} records: {lost} lost, {doubled} doubled"
