"""How many data files a table sink's batch makes: one per core at most.

A micro-batch has a Spark partition per Kafka partition it read, and each wrote a data
file of every commit (one per table partition it held): a 4-partition topic on a 2-core
worker made 4 files a commit where Iceberg's Kafka Connect sink, a task per core, made 2
(36 data files against 16 for the same 100,000 records, docs/benchmarks/
versus-kafka-connect.md). Coalesced to Spark's default parallelism (the cores of the
worker's executors), a batch is read and written by as many Spark tasks as run at once
anyway, with no shuffle, each writing one file, which the table format still rolls over
at its target file size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def one_file_per_core(rows: DataFrame) -> DataFrame:
    """`rows` in at most as many partitions as the executors have cores (never more
    partitions than it had: a coalesce does not split)."""
    return rows.coalesce(rows.sparkSession.sparkContext.defaultParallelism)
