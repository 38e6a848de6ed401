"""Column definitions for the statements that create and evolve an Iceberg table, from
the schema of the rows a task writes.

That schema is a REST caller's: `transform.sql` names the columns and a `value.schema`
DDL may carry comments. So no text of it reaches a statement unquoted: a name is always
a backquoted identifier (a backquote in it doubled), and a type is Spark's SQL for it
without any comment. Spark's own `toDDL` escapes a comment's quotes but not its
backslashes, so a comment ending in `\\` swallowed the next column's quote and a second
comment became SQL (`) USING iceberg LOCATION "/anywhere" --` chose the table's
location).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def quoted(name: str) -> str:
    """`name` as a Spark SQL identifier, whatever it holds."""
    return "`" + name.replace("`", "``") + "`"


def bare(data_type: DataType) -> DataType:
    """`data_type` without its fields' metadata (their comments), nested ones too."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, bare(f.dataType), f.nullable) for f in data_type])
    if isinstance(data_type, ArrayType):
        return ArrayType(bare(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(
            bare(data_type.keyType), bare(data_type.valueType), data_type.valueContainsNull
        )
    return data_type


def type_sql(session: SparkSession, data_type: DataType) -> str:
    """Spark's SQL for `data_type` (nested names quoted by Spark), without comments."""
    jvm: Any = session._jvm
    return str(jvm.org.apache.spark.sql.types.DataType.fromJson(bare(data_type).json()).sql())


def column_definitions(session: SparkSession, schema: StructType) -> str:
    """`name TYPE, ...` for a CREATE TABLE: every column nullable (later batches may lack
    one)."""
    return ", ".join(f"{quoted(f.name)} {type_sql(session, f.dataType)}" for f in schema)
