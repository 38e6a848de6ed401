"""A chain applied to a DataFrame of records (key, value, topic, partition, offset,
timestamp, headers), one projection per stage, in the configured order.

Each stage is a `select` over the one before: a stage's expressions read its input's
columns by name, so the plan grows with the chain, not with the product of its stages'
references (Spark keeps a projection apart rather than inline an expensive expression it
reads twice). A record carries `TRANSFORM_ERROR` (null, or the first stage that failed on
it: alias, class and why) and is left as that stage found it; a record a stage drops
(Filter, ExtractNewRecordState) is taken out after the last stage. Records the caller
marks as not to be transformed (those a converter could not read) pass untouched, so
their own failure is what their error handling sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql.types import DataType

from worker.records.transforms.builders import build_predicate, build_transform
from worker.records.transforms.config import Chain, Stage
from worker.records.transforms.record import (
    HEADER_TYPE,
    HEADERS,
    KEY,
    VALUE,
    ChainContext,
    ChainProblem,
    Change,
    Record,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

TRANSFORM_ERROR: Final = "__sparkherd_transform_error"
"""Null, or struct<alias, class, message>: the stage that failed on the record."""
DROPPED: Final = "__sparkherd_transform_dropped"
SKIPPED: Final = "__sparkherd_transform_skipped"


def with_headers(frame: DataFrame, original: str | None) -> DataFrame:
    """`frame` with a `headers` column: the records' own (the column `original`), or none."""
    from pyspark.sql import functions as f

    if HEADERS in frame.columns:
        return frame
    headers = f.col(original) if original and original in frame.columns else _no_headers()
    return frame.withColumn(HEADERS, headers)


def _no_headers() -> Column:
    from pyspark.sql import functions as f

    return f.lit(None).cast(HEADER_TYPE.simpleString()).alias(HEADERS)


def apply_chain(
    frame: DataFrame,
    chain: Chain,
    context: ChainContext,
    untouched: Column | None = None,
) -> DataFrame:
    """`frame` (with a `headers` column) after the chain, with `TRANSFORM_ERROR` added;
    rows where `untouched` is true pass as they are. `ChainProblem` when a stage cannot
    apply to the records' types."""
    from pyspark.sql import functions as f

    error_type = "struct<alias:string,class:string,message:string>"
    frame = frame.select(
        "*",
        f.lit(None).cast(error_type).alias(TRANSFORM_ERROR),
        f.lit(False).alias(DROPPED),
        (f.lit(False) if untouched is None else f.coalesce(untouched, f.lit(False))).alias(SKIPPED),
    )
    for stage in chain:
        frame = _apply_stage(frame, stage, context)
    return frame.where(~f.col(DROPPED)).drop(DROPPED, SKIPPED)


def _apply_stage(frame: DataFrame, stage: Stage, context: ChainContext) -> DataFrame:
    from pyspark.sql import functions as f

    record = Record(frame.schema[KEY].dataType, frame.schema[VALUE].dataType)
    change = build_transform(stage.transform, record, context)
    live = f.col(TRANSFORM_ERROR).isNull() & ~f.col(DROPPED) & ~f.col(SKIPPED)
    active = live
    if stage.predicate is not None:
        test = f.coalesce(build_predicate(stage.predicate, record, context), f.lit(False))
        active = live & (~test if stage.negate else test)
        _same_types(frame, change, stage)
    columns = {
        part: (f.when(active, column).otherwise(f.col(part)) if stage.predicate else column)
        for part, column in change.parts().items()
    }
    for part, metadata in change.metadata.items():
        columns[part] = columns.get(part, f.col(part)).alias(part, metadata=dict(metadata))
    transform = stage.transform
    error = f.col(TRANSFORM_ERROR)
    if change.error is not None:
        failed = f.struct(
            f.lit(transform.label).alias("alias"),
            f.lit(transform.plugin.class_name).alias("class"),
            change.error.alias("message"),
        )
        error = f.when(active & change.error.isNotNull(), failed).otherwise(error)
    dropped = f.col(DROPPED)
    if change.drop is not None:
        dropped = dropped | f.coalesce(active & change.drop & error.isNull(), f.lit(False))
    kept = [
        f.col(name) for name in frame.columns if name not in (*columns, TRANSFORM_ERROR, DROPPED)
    ]
    return frame.select(
        *kept,
        *(column.alias(part) for part, column in columns.items()),
        error.alias(TRANSFORM_ERROR),
        dropped.alias(DROPPED),
    ).select(*frame.columns)


def _same_types(frame: DataFrame, change: Change, stage: Stage) -> None:
    """A stage that applies to some records only cannot change the key's or the value's
    type: Spark gives every record of a column one type."""
    changed = {part: column for part, column in change.parts().items() if part in (KEY, VALUE)}
    if not changed:
        return
    after = frame.select(*(column.alias(part) for part, column in changed.items())).schema
    for part in changed:
        before: DataType = frame.schema[part].dataType
        if after[part].dataType != before:
            raise ChainProblem(
                stage.transform.key("predicate"),
                f"{stage.transform.plugin.simple_name} changes the {part}'s type "
                f"({before.simpleString()} to {after[part].dataType.simpleString()}), which "
                "cannot apply to some records only: every record of a query has one type",
            )
