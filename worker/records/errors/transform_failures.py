"""Records the transform chain failed on (`worker.records.transforms.chain`'s
`TRANSFORM_ERROR`), as `errors.tolerance` treats them: with `none` the first fails the
task naming the record, the stage and why; with `all` each goes to the dead letter queue
with Connect's stage `TRANSFORMATION` and the transform's class in
`__connect.errors.class.name`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from worker.records.transforms.chain import TRANSFORM_ERROR
from worker.records.transforms.sink_chain import ORIGINAL_TOPIC

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row

TRANSFORM_EXCEPTION: Final = "org.apache.kafka.connect.errors.DataException"
"""What Connect's transforms throw for a record they cannot handle."""


def has_transform_errors(frame: DataFrame) -> bool:
    return TRANSFORM_ERROR in frame.columns


def transform_failed(frame: DataFrame) -> Column:
    """True for the records the chain failed on (false without a chain)."""
    from pyspark.sql import functions as f

    if not has_transform_errors(frame):
        return f.lit(False)
    return f.col(TRANSFORM_ERROR).isNotNull()


def failing_on_transform_errors(frame: DataFrame) -> DataFrame:
    """`errors.tolerance=none`: the query fails at the first record the chain failed on,
    naming where it is, the stage and why."""
    from pyspark.sql import functions as f

    if not has_transform_errors(frame):
        return frame
    error = f.col(TRANSFORM_ERROR)
    where = f.concat(
        error["alias"],
        f.lit(" failed on the record at topic "),
        f.col(ORIGINAL_TOPIC),
        f.lit(", partition "),
        f.col("partition").cast("string"),
        f.lit(", offset "),
        f.col("offset").cast("string"),
        f.lit(" (errors.tolerance=none): "),
        error["message"],
    )
    return frame.where(f.when(error.isNotNull(), f.raise_error(where)).otherwise(f.lit(True)))


def chain_failed_rows(batch: DataFrame, untouched: Column) -> list[Row]:
    """The rows of a (cached) batch the chain failed on among those `untouched` by an
    earlier stage's failure; no Spark job without a chain."""
    if not has_transform_errors(batch):
        return []
    rows: list[Row] = batch.where(untouched & transform_failed(batch)).collect()
    return rows


def read_from(row: Row) -> str:
    """The topic a batch row was read from (before any routing transform)."""
    found = row.asDict().get(ORIGINAL_TOPIC)
    return str(found if found is not None else row["topic"])


def transform_failure(row: Row) -> tuple[str, str, str]:
    """A failed record's class name, exception class and message, as the dead letter
    queue's headers carry them."""
    error = row[TRANSFORM_ERROR]
    return str(error["class"]), TRANSFORM_EXCEPTION, f"{error['alias']}: {error['message']}"
