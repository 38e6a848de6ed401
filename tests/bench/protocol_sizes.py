"""Encoded sizes of a large group's metadata against the broker's 1 MB message limit.

The group coordinator stores every member's subscription and assignment in one record of
the offsets topic, so their sum must stay under `message.max.bytes` (1,048,588 by default;
we keep a margin and require < 1,000,000). The group: 100 workers share 1,000 connectors of
100 tasks each, spread per connector (worker w runs task t of connector c when
(c + t) % 100 == w, i.e. one task of every connector: the layout hardest to compress), and
connector c runs on worker c % 100. Every member shares the leader's config snapshot, so
from v4 on payloads name connectors by their index in it (`protocol.connector_table`) and
the names themselves no longer matter: numbered, descriptive and random 12-letter names (~7
bytes of entropy each, which nothing can compress) all gate. The v3 rows show what members
that name every connector in full send (a group still upgrading) in the gating round only;
they do not gate.

Run: .venv/bin/python -m tests.bench.protocol_sizes   (exit status 1 when over the limit;
`--json PATH` also writes the sizes as a result file, see result_file.py)
"""

from __future__ import annotations

import argparse
import random
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product

from protocol.codec import encode_assignment, encode_subscription
from protocol.connector_table import KNOWN_TABLES, NO_TABLE
from protocol.messages import (
    EMPTY_ALLOCATION,
    Allocation,
    Assignment,
    AssignmentError,
    ConnectorTaskId,
    Subscription,
)
from protocol.versions import CURRENT_VERSION
from tests.bench.result_file import ResultFile, add_json_option

WORKERS = 100
CONNECTORS = 1_000
TASKS_PER_CONNECTOR = 100
LIMIT_BYTES = 1_000_000


def numbered_names() -> list[str]:
    return [f"connector-{index:04d}" for index in range(CONNECTORS)]


def descriptive_names() -> list[str]:
    """Names as teams write them: domain, system, direction and an instance number."""
    domains = [
        "orders",
        "payments",
        "users",
        "inventory",
        "clicks",
        "billing",
        "shipping",
        "audit",
        "metrics",
        "search",
    ]
    systems = [
        "postgres",
        "mysql",
        "s3",
        "jdbc",
        "elasticsearch",
        "mongodb",
        "http",
        "hdfs",
        "bigquery",
        "snowflake",
    ]
    combos = product(domains, systems, ["source", "sink"], range(5))
    return [f"{d}-{s}-{direction}-{n:02d}" for d, s, direction, n in combos]


def random_names() -> list[str]:
    rng = random.Random(7)
    return ["".join(rng.choices(string.ascii_lowercase, k=12)) for _ in range(CONNECTORS)]


@dataclass(frozen=True)
class Naming:
    label: str
    names: Callable[[], list[str]]
    gating: bool


NAMINGS = (
    Naming("numbered", numbered_names, gating=True),
    Naming("descriptive", descriptive_names, gating=True),
    Naming("random", random_names, gating=True),
)


def allocations(names: Sequence[str]) -> list[Allocation]:
    connectors: list[list[str]] = [[] for _ in range(WORKERS)]
    tasks: list[list[ConnectorTaskId]] = [[] for _ in range(WORKERS)]
    for c, name in enumerate(names):
        connectors[c % WORKERS].append(name)
        for t in range(TASKS_PER_CONNECTOR):
            tasks[(c + t) % WORKERS].append(ConnectorTaskId(name, t))
    return [Allocation.of(connectors[w], tasks[w]) for w in range(WORKERS)]


def subscription(worker: int, allocation: Allocation, version: int, table: int) -> Subscription:
    return Subscription(
        version=version,
        max_version=version,
        worker_id=f"worker-{worker:03d}.sparkherd.svc.cluster.local:8083",
        url=f"http://worker-{worker:03d}.sparkherd.svc.cluster.local:8083",
        config_offset=123_456,
        allocation=allocation,
        instance_id=f"sparkherd-{worker}",
        connector_table=table,
    )


def assignment(assigned: Allocation, revoked: Allocation, version: int, table: int) -> Assignment:
    return Assignment(
        version=version,
        leader_max_version=version,
        error=AssignmentError.NONE,
        leader_id="worker-000-5f1c2d9e-8a7b-4c3d-9e2f-1a2b3c4d5e6f",
        leader_url="http://worker-000.sparkherd.svc.cluster.local:8083",
        config_offset=123_456,
        assigned=assigned,
        revoked=revoked,
        delay_ms=0,
        connector_table=table,
    )


@dataclass(frozen=True)
class Round:
    """Which allocations a round's subscriptions report and its assignments carry."""

    label: str
    reported: Callable[[Allocation], Allocation]
    assigned: Callable[[Allocation], Allocation]
    revoked: Callable[[Allocation], Allocation]
    gating: bool


def _everything(allocation: Allocation) -> Allocation:
    return allocation


def _nothing(allocation: Allocation) -> Allocation:
    return EMPTY_ALLOCATION


ROUNDS = (
    Round("steady (report all, nothing moves)", _everything, _nothing, _nothing, gating=False),
    Round(
        "first round (nothing reported, all assigned)",
        _nothing,
        _everything,
        _nothing,
        gating=False,
    ),
    Round("worst case (report all, assign all)", _everything, _everything, _nothing, gating=True),
    Round(
        "full reshuffle (report, revoke and assign all)",
        _everything,
        _everything,
        _everything,
        gating=False,
    ),
)


@dataclass(frozen=True)
class Encoding:
    label: str
    version: int
    indexed: bool
    gating: bool
    """Gating encodings measure every round; the others the gating round only, which
    says enough and keeps `make test` short."""


ENCODINGS = (
    Encoding(f"v{CURRENT_VERSION}", CURRENT_VERSION, indexed=True, gating=True),
    Encoding("v3", 3, indexed=False, gating=False),
)


def measure(
    shares: Sequence[Allocation], round_: Round, version: int, table: int
) -> tuple[int, int]:
    subscriptions = sum(
        len(encode_subscription(subscription(w, round_.reported(share), version, table)))
        for w, share in enumerate(shares)
    )
    assignments = sum(
        len(
            encode_assignment(
                assignment(round_.assigned(share), round_.revoked(share), version, table)
            )
        )
        for share in shares
    )
    return subscriptions, assignments


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_json_option(parser)
    result = ResultFile(__file__, parser.parse_args(argv), argv)
    rows: list[dict[str, object]] = []
    print(
        f"{WORKERS} workers, {CONNECTORS} connectors x {TASKS_PER_CONNECTOR} tasks, "
        f"newest protocol v{CURRENT_VERSION}; limit {LIMIT_BYTES:,} bytes"
    )
    print(
        f"{'names':<12} {'ver':<4} {'round':<48} {'subscriptions':>13} {'assignments':>12} "
        f"{'sum':>10}"
    )
    worst_gating = 0
    for naming, encoding in product(NAMINGS, ENCODINGS):
        names = naming.names()
        shares = allocations(names)
        table = KNOWN_TABLES.add(names) if encoding.indexed else NO_TABLE
        for round_ in ROUNDS if encoding.gating else [r for r in ROUNDS if r.gating]:
            subscriptions, assignments = measure(shares, round_, encoding.version, table)
            total = subscriptions + assignments
            gating = naming.gating and encoding.gating and round_.gating
            marker = " <- must fit" if gating else ""
            print(
                f"{naming.label:<12} {encoding.label:<4} {round_.label:<48} {subscriptions:>13,} "
                f"{assignments:>12,} {total:>10,}{marker}"
            )
            if gating:
                worst_gating = max(worst_gating, total)
            rows.append(
                {
                    "names": naming.label,
                    "version": encoding.label,
                    "round": round_.label,
                    "subscriptions": subscriptions,
                    "assignments": assignments,
                    "sum": total,
                    "gating": gating,
                }
            )
    fits = worst_gating < LIMIT_BYTES
    print(f"largest gating sum: {worst_gating:,} bytes: {'fits' if fits else 'DOES NOT FIT'}")
    result.write(
        {"rows": rows, "largest_gating_sum": worst_gating, "fits": fits},
        {
            "workers": WORKERS,
            "connectors": CONNECTORS,
            "tasks_per_connector": TASKS_PER_CONNECTOR,
            "limit_bytes": LIMIT_BYTES,
            "protocol_version": CURRENT_VERSION,
        },
    )
    return 0 if fits else 1


if __name__ == "__main__":
    sys.exit(main())
