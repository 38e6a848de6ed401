"""One Iceberg table as a task's batches reach it through Spark: created on demand,
evolved on request, and appended to once per batch id.

Exactly once is Iceberg's own streaming sink's mechanism: that sink tags each snapshot
with the query's id and the batch's (epoch) id, and before it commits a batch it looks
in the table's history for one it committed already. Here each append carries two
snapshot summary properties, `sparkherd.app-id` (Spark's id of the task's checkpoint,
kept across restarts and moves, new after an offsets reset) and `sparkherd.batch-id`;
a batch whose pair is in the table's snapshots was committed by a run that died before
Spark recorded the batch in the checkpoint, and is skipped when it runs again.

Every statement runs in the batch's own session (a clone of the task's, made when the
query started, so it has the task's catalog); a failure's message has the catalog's
password replaced before it goes anywhere.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from worker.connectors.iceberg.catalog import (
    COMMIT_RETRIES,
    PartitionField,
    TableName,
    missing_partition_columns,
)
from worker.connectors.iceberg.ddl import column_definitions, quoted, type_sql
from worker.connectors.iceberg.schema import SchemaDiff, compare, schema_problem
from worker.connectors.table_columns import columns_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

APP_ID_PROPERTY: Final = "sparkherd.app-id"
BATCH_ID_PROPERTY: Final = "sparkherd.batch-id"
AUTO_CREATE_KEY: Final = "iceberg.tables.auto-create-enabled"
PARTITION_KEY: Final = "iceberg.tables.default-partition-by"
_APP_ID = re.compile(r"[0-9a-fA-F-]{1,64}")


class IcebergTableError(RuntimeError):
    """The table cannot take the batch (missing, schema, partitioning); says why."""


class IcebergCatalogError(RuntimeError):
    """The catalog or table failed; the cause's text, its password hidden."""


@dataclass(frozen=True)
class TableRules:
    name: TableName
    catalog: str
    partition_by: tuple[PartitionField, ...]
    auto_create: bool
    evolve: bool

    @property
    def qualified(self) -> str:
        return self.name.qualified(self.catalog)


def table_exists(session: SparkSession, rules: TableRules) -> bool:
    return bool(session.catalog.tableExists(rules.qualified))


def check_table_exists(session: SparkSession, rules: TableRules) -> bool:
    """Whether the table exists; refused when it does not and may not be created."""
    if table_exists(session, rules):
        return True
    if not rules.auto_create:
        raise IcebergTableError(
            f"Iceberg table {rules.name} does not exist and {AUTO_CREATE_KEY}=false: "
            "create the table, or set it to true"
        )
    return False


def create_table(session: SparkSession, rules: TableRules, rows: DataFrame) -> None:
    """The table with the batch's columns (all optional, as later batches may lack
    them), partitioned by `iceberg.tables.default-partition-by`; a concurrent creation
    by another task makes this a no-op (or a retried `AlreadyExists`)."""
    missing = missing_partition_columns(rules.partition_by, rows.columns)
    if missing:
        raise IcebergTableError(
            f"{PARTITION_KEY} names {', '.join(missing)}, which the rows for table "
            f"{rules.name} lack (their columns: {', '.join(rows.columns)})"
        )
    session.sql(f"CREATE NAMESPACE IF NOT EXISTS {rules.name.namespace_in(rules.catalog)}")
    session.sql(create_table_statement(session, rules, rows.schema))
    log.info("Created Iceberg table %s", rules.name)


def create_table_statement(session: SparkSession, rules: TableRules, schema: StructType) -> str:
    """`CREATE TABLE` for rows of `schema`: nothing of the schema but quoted names and
    types (`worker.connectors.iceberg.ddl`)."""
    partitioned = (
        f"PARTITIONED BY ({', '.join(f.sql() for f in rules.partition_by)})"
        if rules.partition_by
        else ""
    )
    return (
        f"CREATE TABLE IF NOT EXISTS {rules.qualified} ({column_definitions(session, schema)}) "
        f"USING iceberg {partitioned} "
        f"TBLPROPERTIES ('commit.retry.num-retries'='{COMMIT_RETRIES}', 'format-version'='2')"
    )


def committed_snapshot(
    session: SparkSession, rules: TableRules, app_id: str, batch_id: int
) -> int | None:
    """The snapshot that committed `batch_id` of `app_id`, if the table has one."""
    if not _APP_ID.fullmatch(app_id):
        raise ValueError(f"unexpected checkpoint id {app_id!r}")
    found = session.sql(
        f"SELECT snapshot_id FROM {rules.qualified}.`snapshots` "
        f"WHERE summary['{APP_ID_PROPERTY}'] = '{app_id}' "
        f"AND summary['{BATCH_ID_PROPERTY}'] = '{batch_id}' LIMIT 1"
    ).collect()
    return int(found[0][0]) if found else None


def fitted(session: SparkSession, rules: TableRules, rows: DataFrame) -> DataFrame:
    """`rows` as the table takes them: the table evolved first when the rows need it and
    it may be, the table's columns the rows lack added as nulls."""
    from pyspark.sql import functions

    table = session.table(rules.qualified).schema
    diff = compare(columns_of(table), columns_of(rows.schema))
    problem = schema_problem(diff, str(rules.name), rules.evolve)
    if problem is not None:
        raise IcebergTableError(problem)
    if diff.changes:
        _evolve(session, rules, diff, rows)
    types = {f.name: f.dataType for f in table}
    return rows.select(
        *rows.columns,
        *(functions.lit(None).cast(types[c.name]).alias(c.name) for c in diff.absent),
    )


def _evolve(session: SparkSession, rules: TableRules, diff: SchemaDiff, rows: DataFrame) -> None:
    types = {f.name.lower(): f.dataType for f in rows.schema}

    def column(name: str) -> str:
        return f"{quoted(name)} {type_sql(session, types[name.lower()])}"

    if diff.added:
        columns = ", ".join(column(c.name) for c in diff.added)
        session.sql(f"ALTER TABLE {rules.qualified} ADD COLUMNS ({columns})")
    for change in diff.widened:
        session.sql(
            f"ALTER TABLE {rules.qualified} ALTER COLUMN {quoted(change.name)} "
            f"TYPE {type_sql(session, types[change.name.lower()])}"
        )
    log.info(
        "Evolved Iceberg table %s: added %s, widened %s",
        rules.name,
        [c.name for c in diff.added] or "nothing",
        [c.name for c in diff.widened] or "nothing",
    )


def append(rows: DataFrame, rules: TableRules, app_id: str, batch_id: int) -> None:
    (
        rows.writeTo(rules.qualified)
        .option(f"snapshot-property.{APP_ID_PROPERTY}", app_id)
        .option(f"snapshot-property.{BATCH_ID_PROPERTY}", str(batch_id))
        .append()
    )
