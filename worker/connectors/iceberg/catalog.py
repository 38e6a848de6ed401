"""`kafka-to-iceberg`'s table, partitioning and catalog keys, read into what Spark takes.

The keys are those of Apache Iceberg's own Kafka Connect sink, so its users can move a
config over; only the two catalogs a worker can reach without more jars are offered
(`hadoop`: a directory; `jdbc`: PostgreSQL, whose driver the worker ships), and only the
catalog keys named here reach Iceberg: a passed-through `iceberg.catalog.*` could load a
class of the user's choosing (`io-impl`, `catalog-impl`) into the worker, as could some
parameters of the jdbc catalog's URL. That URL therefore passes the one check of every
JDBC URL (`worker.connectors.jdbc.connection.check_jdbc_uri`: an allow-list) and reaches
the JVM driver as that check read it: host, port and database in the URL, each parameter
a connection property, beside those that keep a clear-text password from an unverified
server and the worker's own credentials from every server
(`worker.connectors.jdbc.login_policy`).

The catalog is set in the task's own Spark session (under `iceberg.catalog`'s name), so
no other task, and not the worker's own session, sees it or its password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from worker.connectors.jdbc.connection import pgjdbc_connection

CatalogType = Literal["hadoop", "jdbc"]

SPARK_CATALOG_CLASS: Final = "org.apache.iceberg.spark.SparkCatalog"
COMMIT_RETRIES: Final = 20
"""`commit.retry.num-retries` of a table this connector creates (Iceberg's default is 4):
tasks appending to one table at once each retry on the others' commits, and an append
that retries never conflicts, it only re-applies its files on the newer metadata."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TRANSFORM = re.compile(
    r"(?P<name>years|months|days|hours|bucket|truncate)\s*\(\s*"
    r"(?:(?P<width>\d+)\s*,\s*)?(?P<column>[A-Za-z_][A-Za-z0-9_]*)\s*\)",
    re.IGNORECASE,
)
_TOP_LEVEL_COMMA = re.compile(r",(?![^()]*\))")
"""A comma outside parentheses: `bucket(16, id)` is one field."""
_WIDTH_TRANSFORMS: Final = ("bucket", "truncate")


class IcebergKeyError(ValueError):
    """A table, partition or catalog value the connector cannot use; the message says why."""


@dataclass(frozen=True)
class TableName:
    namespace: tuple[str, ...]
    table: str

    def qualified(self, catalog: str) -> str:
        """`catalog`.`ns`.`table`, quoted, as Spark SQL and `writeTo` take it."""
        return ".".join(f"`{part}`" for part in (catalog, *self.namespace, self.table))

    def namespace_in(self, catalog: str) -> str:
        return ".".join(f"`{part}`" for part in (catalog, *self.namespace))

    def __str__(self) -> str:
        return ".".join((*self.namespace, self.table))


def parse_table(text: str) -> TableName:
    """Exactly one `namespace.table` (a namespace may have levels: `a.b.table`)."""
    if "," in text:
        raise IcebergKeyError(
            "names more than one table; this connector writes exactly one (namespace.table)"
        )
    parts = [part.strip() for part in text.strip().split(".")]
    if len(parts) < 2:
        raise IcebergKeyError("must be namespace.table")
    bad = [part for part in parts if not _IDENTIFIER.fullmatch(part)]
    if bad:
        raise IcebergKeyError(
            f"{bad[0]!r} is not a name (letters, digits and '_', not starting with a digit)"
        )
    return TableName(tuple(parts[:-1]), parts[-1])


@dataclass(frozen=True)
class PartitionField:
    """A column, or an Iceberg transform of one (`days(ts)`, `bucket(16, id)`)."""

    column: str
    transform: str | None = None
    width: int | None = None

    def sql(self) -> str:
        """The field in Spark's `PARTITIONED BY`, which takes Iceberg's transforms."""
        column = f"`{self.column}`"
        if self.transform is None:
            return column
        if self.width is not None:
            return f"{self.transform}({self.width}, {column})"
        return f"{self.transform}({column})"


def parse_partition_by(text: str) -> tuple[PartitionField, ...]:
    """Comma-separated columns or transforms: `years`, `months`, `days`, `hours` of a
    column, `bucket(N, col)` and `truncate(N, col)`."""
    fields = []
    for item in (part.strip() for part in _TOP_LEVEL_COMMA.split(text)):
        if not item:
            continue
        if _IDENTIFIER.fullmatch(item):
            fields.append(PartitionField(item))
            continue
        match = _TRANSFORM.fullmatch(item)
        if match is None:
            raise IcebergKeyError(
                f"{item!r} is neither a column nor one of Iceberg's transforms "
                "(years, months, days, hours of a column; bucket(N, col), truncate(N, col))"
            )
        name, width = match["name"].lower(), match["width"]
        if (width is not None) != (name in _WIDTH_TRANSFORMS):
            form = f"{name}(N, col)" if name in _WIDTH_TRANSFORMS else f"{name}(col)"
            raise IcebergKeyError(f"{item!r}: write it as {form}")
        if width is not None and int(width) < 1:
            raise IcebergKeyError(f"{item!r}: N must be at least 1")
        fields.append(PartitionField(match["column"], name, int(width) if width else None))
    return tuple(fields)


def missing_partition_columns(fields: tuple[PartitionField, ...], columns: list[str]) -> list[str]:
    """The partition columns the rows lack (Spark's names compare blind to case)."""
    present = {column.lower() for column in columns}
    missing: dict[str, str] = {}
    for f in fields:
        if f.column.lower() not in present:
            missing.setdefault(f.column.lower(), f.column)
    return list(missing.values())


def check_catalog_name(name: str) -> str:
    """The catalog's name, which Iceberg also records: a jdbc catalog keeps its tables
    under it (`iceberg_tables.catalog_name`), so every reader of the catalog must use the
    same one (Iceberg's Kafka Connect sink's default is `iceberg`). It is set only in
    each task's own session, so tasks of different connectors may use one name."""
    if not _IDENTIFIER.fullmatch(name):
        raise IcebergKeyError("must be a name (letters, digits and '_', not starting with a digit)")
    if name.lower() == "spark_catalog":
        raise IcebergKeyError("spark_catalog is Spark's own catalog; name another")
    return name


@dataclass(frozen=True)
class CatalogSettings:
    type: CatalogType
    warehouse: str
    uri: str | None = None
    user: str | None = None
    password: str | None = None


def catalog_conf(name: str, catalog: CatalogSettings) -> dict[str, str]:
    """The Spark SQL settings that make catalog `name` Iceberg's. The table cache is off:
    a task decides whether a batch is already committed from the table's snapshots,
    which must be the catalog's latest, not a cached copy."""
    prefix = f"spark.sql.catalog.{name}"
    conf = {
        prefix: SPARK_CATALOG_CLASS,
        f"{prefix}.type": catalog.type,
        f"{prefix}.warehouse": catalog.warehouse,
        f"{prefix}.cache-enabled": "false",
    }
    if catalog.type == "jdbc":
        uri, properties = pgjdbc_connection(catalog.uri or "", catalog.user, catalog.password)
        conf[f"{prefix}.uri"] = uri
        conf.update({f"{prefix}.jdbc.{key}": value for key, value in properties.items()})
    return conf
