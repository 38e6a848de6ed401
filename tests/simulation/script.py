"""The scenario language: one operation per line, `#` starts a comment.

join W1 W2          start (or restart) workers
leave W2            graceful shutdown: stop work, LeaveGroup
retire W2           leave for good: announce it, hand work over, then leave
crash W2            die without a word (found by the session time-out)
bounce W2 10s       leave, come back 10 s later (`bounce W2 10s crash` to crash)
connector A 3       create connector A with 3 tasks, or change its task count
delete A
lag W1 5s           W1 reads config records 5 s late
fail-sync W1        W1's next SyncGroup answer is lost
advance 30s         let virtual time pass (ms, s or m)
settle              run until quiet, wait past the delay, check the invariants
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tests.simulation.cluster import RoundRecord, SimCluster

_DURATION = re.compile(r"^(\d+)(ms|s|m)$")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000}


def duration_ms(text: str) -> int:
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 10s, 5m)")
    return int(match.group(1)) * _UNIT_MS[match.group(2)]


@dataclass(frozen=True)
class StepOutcome:
    line: str
    rounds: tuple[RoundRecord, ...]
    """Rounds completed while this step ran."""


def _bounce(cluster: SimCluster, args: list[str]) -> None:
    if len(args) not in (2, 3) or (len(args) == 3 and args[2] != "crash"):
        raise ValueError("bounce NAME DURATION [crash]")
    cluster.bounce(args[0], duration_ms(args[1]), crash=len(args) == 3)


def _one(action: Callable[[str], None]) -> Callable[[SimCluster, list[str]], None]:
    def run(_: SimCluster, args: list[str]) -> None:
        if len(args) != 1:
            raise ValueError("expected exactly one name")
        action(args[0])

    return run


def _commands(cluster: SimCluster) -> dict[str, Callable[[SimCluster, list[str]], None]]:
    return {
        "join": lambda c, a: c.join(*a),
        "leave": _one(cluster.leave),
        "retire": _one(cluster.retire),
        "crash": _one(cluster.crash),
        "bounce": _bounce,
        "connector": lambda c, a: c.put_connector(a[0], int(a[1])),
        "delete": _one(cluster.delete_connector),
        "lag": lambda c, a: c.lag_config(a[0], duration_ms(a[1])),
        "fail-sync": _one(cluster.fail_next_sync),
        "advance": lambda c, a: c.advance(duration_ms(a[0])),
        "settle": lambda c, a: c.settle(),
    }


def run_script(cluster: SimCluster, text: str) -> list[StepOutcome]:
    commands = _commands(cluster)
    outcomes = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        verb, *args = line.split()
        if verb not in commands:
            raise ValueError(f"unknown step {verb!r} in {line!r}")
        before = len(cluster.rounds)
        commands[verb](cluster, args)
        outcomes.append(StepOutcome(line, tuple(cluster.rounds[before:])))
    return outcomes
