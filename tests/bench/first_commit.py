"""From `POST /connectors` to the first committed batch of a new sink connector on a
running worker, for a small topic (100 JSON records over 4 partitions): `kafka-to-delta`,
`kafka-to-iceberg` and `kafka-to-jdbc` (into PostgreSQL 15), on Apache Kafka.

Each repeat starts a worker of its own (warm-up on, as deployed) and posts one connector
of each kind, the kinds in turn first (the first connector on a worker pays for whatever
its Spark has not done yet), then one more of each (every path warm). The clock starts
as the POST is sent and stops when the sink shows the batch: the Delta table's first
version, the Iceberg table's first snapshot, the rows in PostgreSQL (looked for every
20 ms). The worker's log splits each span: until the task configs are stored, until the
round that assigns the task, until the task runs (its query started), until the commit.

    python -m tests.bench.first_commit              # 3 repeats
    python -m tests.bench.first_commit --repeats 6 --json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from tests.bench.result_file import ResultFile, add_json_option
from tests.support.kafka_topics import new_topic, produce
from tests.support.postgres import PostgresServer, running_postgres
from tests.support.processes import WARM_UP_ON, ready_worker, running_broker
from tests.support.rest_client import Api
from worker.kafka.client import Outgoing

KINDS = ("delta", "iceberg", "jdbc")
RECORDS = 100
PARTITIONS = 4
LOOK_S = 0.02
TIMEOUT_S = 120.0
TARGET_S = 3.0
PHASES = ("stored_s", "assigned_s", "running_s", "committed_s")


@dataclass(frozen=True)
class FirstCommit:
    kind: str
    repeat: int
    place: str
    """`first on worker`, `first of kind` or `again`."""
    stored_s: float
    """POST sent to `task configs changed` in the worker's log."""
    assigned_s: float
    running_s: float
    committed_s: float


@dataclass(frozen=True)
class Target:
    config: dict[str, str]
    committed: Callable[[], bool]


def records() -> list[Outgoing]:
    return [
        Outgoing(str(n).encode(), json.dumps({"id": n, "note": f"row {n}"}).encode())
        for n in range(RECORDS)
    ]


def target(kind: str, name: str, topic: str, root: Path, postgres: PostgresServer) -> Target:
    if kind == "delta":
        table = root / name
        first_version = table / "_delta_log" / f"{0:020}.json"
        return Target(
            {"connector.class": "kafka-to-delta", "table.path": str(table)}, first_version.exists
        )
    if kind == "iceberg":
        warehouse = root / name
        return Target(
            {
                "connector.class": "kafka-to-iceberg",
                "iceberg.catalog.type": "hadoop",
                "iceberg.catalog.warehouse": str(warehouse),
                "iceberg.tables": "bench.first",
            },
            partial(has_snapshot, warehouse),
        )

    def rows_there() -> bool:
        try:
            return bool(postgres.execute(f"SELECT count(*) FROM {name}")[0][0])
        except Exception:  # the table is not created yet
            return False

    return Target(
        {
            "connector.class": "kafka-to-jdbc",
            **postgres.connection_config(),
            "key.converter": "string",
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
            "auto.create": "true",
            "table.name.format": name,
        },
        rows_there,
    )


def has_snapshot(warehouse: Path) -> bool:
    """Whether a committed metadata file of the hadoop catalog names a current snapshot
    (each is written whole, then renamed into place)."""
    return any(
        json.loads(metadata.read_text()).get("current-snapshot-id", -1) not in (None, -1)
        for metadata in warehouse.rglob("v*.metadata.json")
    )


def logged_at(log: str, marker: str, after: float) -> float:
    """The time of the first line of the worker's log holding `marker` at or after
    `after` (epoch seconds)."""
    for line in log.splitlines():
        if marker in line:
            at = datetime.fromisoformat(line.split(" ", 1)[0]).timestamp()
            if at >= after - 0.001:
                return at
    raise AssertionError(f"no log line with {marker!r}")


def wait_for(done: Callable[[], bool], what: str) -> float:
    deadline = time.time() + TIMEOUT_S
    while not done():
        if time.time() > deadline:
            raise AssertionError(f"{what}: no commit within {TIMEOUT_S:.0f} s")
        time.sleep(LOOK_S)
    return time.time()


@contextmanager
def measuring(root: Path) -> Iterator[Callable[[int], list[FirstCommit]]]:
    with running_broker(root) as broker, running_postgres() as postgres:

        def repeat(index: int) -> list[FirstCommit]:
            home = root / f"repeat-{index}"
            home.mkdir()
            order = KINDS[index % len(KINDS) :] + KINDS[: index % len(KINDS)]
            measured: list[FirstCommit] = []
            with ready_worker("worker", broker.bootstrap_servers, home, [WARM_UP_ON]) as worker:
                api = Api(worker.url)
                warm = next(
                    (line for line in worker.log_text().splitlines() if "warm after" in line), ""
                )
                print(f"repeat {index}: {warm.split('INFO ', 1)[-1]}", flush=True)
                for round_ in range(2):
                    for kind in order:
                        name = f"{kind}_{index}_{round_}"
                        topic = new_topic(broker.bootstrap_servers, name, PARTITIONS)
                        produce(broker.bootstrap_servers, topic, records())
                        sink = target(kind, name, topic, home, postgres)
                        config = {
                            "tasks.max": "1",
                            "kafka.bootstrap.servers": broker.bootstrap_servers,
                            "topics": topic,
                            **sink.config,
                        }
                        posted = time.time()
                        api.call("POST", "/connectors", 201, json={"name": name, "config": config})
                        committed = wait_for(sink.committed, name)
                        log = worker.log_text()
                        stored = logged_at(log, f"connector {name}: task configs changed", posted)
                        assigned = logged_at(log, "joined generation", stored)
                        running = logged_at(log, f"Task {name}-0 is running", assigned)
                        place = (
                            "again"
                            if round_
                            else "first on worker"
                            if not measured
                            else "first of kind"
                        )
                        measured.append(
                            FirstCommit(
                                kind,
                                index,
                                place,
                                stored - posted,
                                assigned - posted,
                                running - posted,
                                committed - posted,
                            )
                        )
                        print(line(measured[-1]), flush=True)
            return measured

        yield repeat


def line(run: FirstCommit) -> str:
    spans = "  ".join(f"{phase.removesuffix('_s')} {getattr(run, phase):5.2f}" for phase in PHASES)
    return f"repeat {run.repeat}  {run.kind:8} {run.place:16} {spans} s"


def spread(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):5.2f} s [{min(seconds):.2f}-{max(seconds):.2f}]"


def summary(runs: list[FirstCommit]) -> dict[str, Any]:
    groups: dict[str, list[FirstCommit]] = {}
    for run in runs:
        groups.setdefault(f"{run.kind}, {run.place}", []).append(run)
    firsts = [r.committed_s for r in runs if r.place == "first on worker"]
    groups_shown = {"first connector on a worker (any kind)": firsts}
    groups_shown |= {key: [r.committed_s for r in group] for key, group in sorted(groups.items())}
    print(f"\n{'first commit after POST /connectors':42} median [range]   n")
    for key, seconds in groups_shown.items():
        print(f"{key:42} {spread(seconds)}   {len(seconds)}")
    slowest = max(r.committed_s for r in runs)
    verdict = "meets" if slowest <= TARGET_S else "misses"
    print(f"slowest {slowest:.2f} s: {verdict} the {TARGET_S:.0f} s target")
    return {
        "first_commit_s": {
            key: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}
            for key, v in groups_shown.items()
        },
        "slowest_s": slowest,
        "meets_target": slowest <= TARGET_S,
        "runs": [asdict(r) for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="workers, each a fresh one")
    add_json_option(parser)
    args = parser.parse_args()
    result = ResultFile(__file__, args)
    runs: list[FirstCommit] = []
    with (
        tempfile.TemporaryDirectory(prefix="sparkherd-first-commit-") as root,
        measuring(Path(root)) as repeat,
    ):
        for index in range(args.repeats):
            runs += repeat(index)
    figures = summary(runs)
    result.write(figures, {"records": RECORDS, "partitions": PARTITIONS, "target_s": TARGET_S})


if __name__ == "__main__":
    main()
