"""The cost of a transform chain (issue 43, item 6): `kafka-to-files` reading Connect's
JSON with schemas, with and without a chain of three of Connect's transforms
(`ReplaceField$Value`, `Cast$Value`, `InsertField$Value`), alternated and repeated on
Apache Kafka by one sparkherd worker.

The runs are `kafka_to_files_throughput`'s worker runs (one worker serving every run, a
connector and a topic of its own per run, a warm-up wave, the connector paused, the
backlog produced, the clock from the resume to the backlog committed in parquet), with
records as Connect's JsonConverter writes a struct (a long id, strings, a double, an
int, a Timestamp) and two configs that differ only in `transforms`. Runs alternate
(chain, plain, then plain, chain, ...) after an untimed warm-up run of each, so that a
load that changes during the bench biases neither. Every chain run's files are read
back: the excluded field is gone, the cast fields have their new types and the
inserted fields their values, so a chain that did nothing cannot be timed. Target: the
chain keeps at least 0.90 of the plain connector's rows/s (ratio of the medians). The
throughput bench's `Run.client` holds the variant here (`chain` or `plain`); every run
uses the JVM Kafka source.

    python -m tests.bench.transform_chain_cost            # 1,000,000 records x 3 each
    python -m tests.bench.transform_chain_cost --quick    # 100,000 records x 2 each
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tests.bench.kafka_to_files_throughput import (
    COLUMNS,
    WARM_UP,
    WARM_UP_RUN,
    Run,
    connector_config,
    load,
    spread,
    worker_side,
)
from tests.bench.result_file import ResultFile, add_json_option
from tests.support.file_sink import committed_files
from tests.support.processes import running_broker
from worker.kafka.client import Outgoing

VARIANTS: Final = ("chain", "plain")
TARGET_RATIO: Final = 0.90
TIMESTAMP: Final = "org.apache.kafka.connect.data.Timestamp"
VALUE_SCHEMA: Final[dict[str, Any]] = {
    "type": "struct",
    "name": "bench.Order",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "customer", "type": "string", "optional": False},
        {"field": "city", "type": "string", "optional": True},
        {"field": "note", "type": "string", "optional": True},
        {"field": "price", "type": "double", "optional": False},
        {"field": "qty", "type": "int32", "optional": False},
        {"field": "created", "type": "int64", "name": TIMESTAMP, "version": 1},
    ],
}
"""A struct as Connect's JsonConverter writes its schema (`double`, a logical Timestamp)."""
CHAIN: Final = {
    "transforms": "drop,cast,stamp",
    "transforms.drop.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.drop.exclude": "note",
    "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
    "transforms.cast.spec": "price:float32,qty:int64",
    "transforms.stamp.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.stamp.static.field": "loaded_by",
    "transforms.stamp.static.value": "sparkherd",
    "transforms.stamp.topic.field": "source_topic",
    "transforms.stamp.offset.field": "source_offset",
}
CHAINED_FIELDS: Final = {
    "id": pa.int64(),
    "customer": pa.string(),
    "city": pa.string(),
    "price": pa.float32(),
    "qty": pa.int64(),
    "created": pa.timestamp("ns"),
    "loaded_by": pa.string(),
    "source_topic": pa.string(),
    "source_offset": pa.int64(),
}
"""The value's fields in a chain run's files: `note` dropped, `price` and `qty` cast,
three fields inserted (Spark writes a timestamp as parquet's INT96, which pyarrow reads
in nanoseconds)."""
PLAIN_FIELDS: Final = {
    "id": pa.int64(),
    "customer": pa.string(),
    "city": pa.string(),
    "note": pa.string(),
    "price": pa.float64(),
    "qty": pa.int32(),
    "created": pa.timestamp("ns"),
}


def orders(numbers: range) -> list[Outgoing]:
    """Record `n` as Connect's JsonConverter writes it: the schema, then the payload."""
    schema = json.dumps(VALUE_SCHEMA)
    return [
        Outgoing(
            f"key-{n}".encode(),
            f'{{"schema":{schema},"payload":{json.dumps(order(n))}}}'.encode(),
        )
        for n in numbers
    ]


def order(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "customer": f"customer-{n % 9973}",
        "city": None if n % 10 == 0 else f"city-{n % 97}",
        "note": f"note for order {n}",
        "price": n % 100_000 / 100,
        "qty": n % 50,
        "created": 1_764_000_000_000 + n,
    }


def bench_config(servers: str, topic: str, output: Path, variant: str) -> dict[str, str]:
    """The throughput bench's config (the JVM Kafka source) reading JSON with schemas;
    with the chain or without, nothing else differs."""
    config = {
        **connector_config(servers, topic, output, "jvm"),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
    }
    return {**config, **CHAIN} if variant == "chain" else config


def check_output(run_dir: Path, variant: str, records: int) -> None:
    """The run's committed files hold every record, with the value's fields the variant
    leaves, and in a chain run the inserted fields' values: a chain that did nothing
    fails the bench."""
    files = committed_files(run_dir / "out" / "task-0")
    table = pa.concat_tables(
        pq.read_table(path, columns=["value", "topic", "offset"]) for path in files
    )
    if table.num_rows != WARM_UP + records:
        raise AssertionError(f"{variant}: {table.num_rows} rows, not {WARM_UP + records}")
    value = table.schema.field("value").type
    found = {value.field(i).name: value.field(i).type for i in range(value.num_fields)}
    wanted = CHAINED_FIELDS if variant == "chain" else PLAIN_FIELDS
    if found != wanted:
        raise AssertionError(f"{variant}: the value's fields are {found}, not {wanted}")
    if variant == "chain":
        values = table.column("value").combine_chunks()
        inserted = {
            "loaded_by": pa.scalar("sparkherd"),
            "source_topic": table.column("topic"),
            "source_offset": table.column("offset"),
        }
        for name, wanted_value in inserted.items():
            same = pc.equal(values.field(name), wanted_value)
            if pc.all(same, skip_nulls=False).as_py() is not True:
                raise AssertionError(f"chain: {name} is not what InsertField inserts")


def order_of_runs(repeat: int) -> list[str]:
    """Each round alternates which variant goes first: chain, plain, plain, chain, ..."""
    return [v for r in range(repeat) for v in (VARIANTS if r % 2 == 0 else VARIANTS[::-1])]


def report(runs: Sequence[Run]) -> dict[str, float]:
    """Prints the table; returns chain / plain (rows/s medians, drain only, CPU a run)."""
    print(f"\n{runs[0].records:,} records a run after a warm-up of {WARM_UP:,}, on Apache Kafka")
    print("kafka-to-files, JSON with schemas, parquet; median [range] per variant")
    names = ("rows/s", "restart s", "drain rows/s", "JVM CPU s", "load")
    print("\n" + f"{'':8}" + "".join(f"{name:>{COLUMNS[name][2]}}" for name in names))
    by_variant = {v: [r for r in runs if r.client == v] for v in VARIANTS}
    for variant, mine in by_variant.items():
        cells = (
            f"{spread([read(r) for r in mine], fmt):>{width}}"
            for read, fmt, width in (COLUMNS[name] for name in names)
        )
        print(f"{variant:8}" + "".join(cells))
    ratio, drain = (
        statistics.median(map(read, by_variant["chain"]))
        / statistics.median(map(read, by_variant["plain"]))
        for read in (COLUMNS["rows/s"][0], COLUMNS["drain rows/s"][0])
    )
    cpu = statistics.median(r.cpu.total_s for r in by_variant["chain"]) / statistics.median(
        r.cpu.total_s for r in by_variant["plain"]
    )
    verdict = "meets" if ratio >= TARGET_RATIO else "misses"
    print(
        f"\nchain / plain, rows/s medians {ratio:.3f} ({verdict} the {TARGET_RATIO} target);"
        f" drain only {drain:.3f}; CPU a run (Python + JVM) {cpu:.3f}; load at the end"
        f" {load():.1f}"
    )
    return {"rows_per_s": ratio, "drain_only": drain, "cpu_a_run": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 records x 2")
    parser.add_argument("--records", type=int, default=1_000_000, help="a backlog's size")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs a variant")
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    records, repeat = (100_000, 2) if args.quick else (args.records, args.repeat)
    print(f"load at the start {load():.1f}", flush=True)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp, running_broker(Path(tmp)) as broker:
        servers, root = broker.bootstrap_servers, Path(tmp)
        with worker_side(servers, root / "worker", [], bench_config, orders, True) as run_on:
            plan = [(v, True) for v in VARIANTS] + [(v, False) for v in order_of_runs(repeat)]
            for n, (variant, warm_up) in enumerate(plan):
                size = min(records, WARM_UP_RUN) if warm_up else records
                run_dir = root / "worker" / f"run-{n}"
                run = run_on(servers, run_dir, size, variant)
                check_output(run_dir, variant, size)
                if not warm_up:
                    runs.append(run)
                print(describe(n, warm_up, run), flush=True)
    chain_over_plain = report(runs)
    result.write(
        {"runs": [run.figures() for run in runs], "chain_over_plain": chain_over_plain},
        {"records": records, "repeat": repeat, "warm_up": WARM_UP, "target_ratio": TARGET_RATIO},
    )


def describe(n: int, warm_up: bool, run: Run) -> str:
    return (
        f"{'warm-up' if warm_up else 'run'} {n}: {run.client:5} {run.seconds:6.2f} s"
        f" {run.rows_per_s:9,.0f} rows/s, restart {run.restart_s:5.2f} s, {run.batches}"
        f" batches, CPU Python {run.cpu.python_s:.2f} s JVM {run.cpu.jvm_s:.2f} s"
        f" (waited {run.cpu.jvm_waited_s:.2f} s), load {run.load:.1f}"
    )


if __name__ == "__main__":
    main()
