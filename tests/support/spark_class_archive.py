"""The class archive of the tests' Spark drivers: `python -m tests.support.spark_class_archive
PATH` (`make test` runs it when the venv changes) writes one, `tests.support.jvm_options`
hands it to every Spark driver a test starts.

A driver's start is mostly the JVM loading, verifying and linking Spark's classes, and the
suite starts more than a hundred of them. An archive of those classes, dumped by one JVM
at its exit (Java's dynamic CDS), is mapped by the next ones instead: a SparkSession's
start 4.5 -> 2.4 CPU seconds, its first job 3.5 -> 1.8, on the 2-core machine. The dump
runs the kinds of work the tests' drivers do (batch SQL, JSON, Parquet, streaming queries
with `foreachBatch` and a file sink) so that their classes are in it, then a second JVM
must map the archive (`-Xshare:on` refuses to start otherwise), so an archive this JDK or
this classpath cannot use fails here, not silently in every test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from tests.support.jvm_options import SHORT_LIVED_JVM


def _session(java_options: str) -> SparkSession:
    return (
        SparkSession.builder.master("local[2]")
        .appName("spark-class-archive")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.extraJavaOptions", f"{SHORT_LIVED_JVM} {java_options}")
        .getOrCreate()
    )


def _exercise(spark: SparkSession, scratch: Path) -> None:
    """What a test's driver does, in small: the classes of each kind of work get loaded."""
    rows = spark.range(1000).selectExpr(
        "id", "id % 7 AS k", "to_json(named_struct('id', id, 'k', id % 7)) AS j"
    )
    rows.groupBy("k").count().collect()
    parsed = rows.selectExpr("from_json(j, 'id BIGINT, k INT') AS v").select("v.*")
    parsed.write.parquet(str(scratch / "table"))
    spark.read.parquet(str(scratch / "table")).join(parsed, "id").count()

    def each_batch(batch: DataFrame, _batch_id: int) -> None:
        batch.count()

    stream = spark.readStream.format("rate").option("rowsPerSecond", 100).load()
    queries = [
        stream.writeStream.foreachBatch(each_batch)
        .option("checkpointLocation", str(scratch / "each"))
        .trigger(processingTime="200 milliseconds")
        .start(),
        stream.writeStream.format("parquet")
        .option("path", str(scratch / "files"))
        .option("checkpointLocation", str(scratch / "files-checkpoint"))
        .trigger(processingTime="200 milliseconds")
        .start(),
    ]
    deadline = time.monotonic() + 120
    while any(q.lastProgress is None or q.lastProgress["batchId"] < 2 for q in queries):
        if time.monotonic() > deadline:
            raise TimeoutError("the archive's streaming queries made no progress in 120 s")
        time.sleep(0.2)
    for query in queries:
        query.stop()


def _run(java_options: str, exercise: bool) -> None:
    """One driver's life, to its JVM's exit, when a dynamic archive is written; without
    `exercise` only its start, all a check of `-Xshare:on` needs."""
    spark = _session(java_options)
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    if exercise:
        with tempfile.TemporaryDirectory() as scratch:
            _exercise(spark, Path(scratch))
    spark.stop()
    process = gateway.proc
    process.stdin.close()  # the JVM exits when its parent's pipe closes
    process.wait(timeout=120)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1].startswith("-"):
        print(f"usage: {argv[0]} ARCHIVE", file=sys.stderr)
        return 2
    archive = Path(argv[1]).resolve()
    archive.parent.mkdir(parents=True, exist_ok=True)
    draft = archive.with_name(f".{archive.name}.{os.getpid()}")
    driver = [sys.executable, "-m", "tests.support.spark_class_archive"]
    try:
        dump = f"-XX:ArchiveClassesAtExit={draft} -Xlog:cds*=off"
        subprocess.run([*driver, "--run", dump], check=True)
        if not draft.exists():
            print(f"the JVM wrote no class archive at {draft}", file=sys.stderr)
            return 1
        subprocess.run(
            [*driver, "--check", f"-XX:SharedArchiveFile={draft} -Xshare:on"], check=True
        )
        os.replace(draft, archive)
    finally:
        draft.unlink(missing_ok=True)
    print(f"{archive}: {archive.stat().st_size / 2**20:.0f} MiB of Spark's classes")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("--run", "--check"):
        _run(sys.argv[2], exercise=sys.argv[1] == "--run")
        sys.exit(0)
    sys.exit(main(sys.argv))
