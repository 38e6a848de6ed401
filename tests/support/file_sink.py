"""Reading what Spark's file sink committed, the way Spark itself decides it.

A batch interrupted by SIGKILL can leave a data file behind that no metadata log entry
lists; Spark ignores it, so the exactly-once checks must too.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq

METADATA_DIR = "_spark_metadata"


def committed_files(directory: Path) -> list[Path]:
    log = directory / METADATA_DIR
    if not log.is_dir():
        return []
    files: set[Path] = set()
    for entry in log.iterdir():
        if entry.name.startswith(".") or entry.name.endswith(".tmp"):
            continue
        for line in entry.read_text().splitlines()[1:]:
            record = json.loads(line)
            if record.get("action") == "add":
                files.add(Path(unquote(urlparse(record["path"]).path)))
    return sorted(files)


def committed_column(directory: Path, column: str) -> list[int]:
    """Every value of `column` in the committed parquet files, sorted."""
    values: list[int] = []
    for path in committed_files(directory):
        values.extend(pq.read_table(path, columns=[column]).column(column).to_pylist())
    return sorted(values)


def committed_records(output: Path) -> list[tuple[str, int, int]]:
    """(key, partition, offset) of every committed row of a Kafka sink's `output.path`,
    over all its task directories."""
    rows: list[tuple[str, int, int]] = []
    for task_dir in sorted(output.glob("task-*")):
        for path in committed_files(task_dir):
            table = pq.read_table(path, columns=["key", "partition", "offset"]).to_pydict()
            rows += zip(table["key"], table["partition"], table["offset"], strict=True)
    return rows
