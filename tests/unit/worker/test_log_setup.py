from __future__ import annotations

import logging

from worker.log_setup import RepeatFilter


def record(name: str, message: str) -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, message, None, None)


def test_a_repeated_line_is_dropped_until_the_quiet_period_is_over() -> None:
    now = [0.0]
    repeats = RepeatFilter(quiet_s=30.0, clock=lambda: now[0])
    assert repeats.filter(record("aiokafka", "Unable connect to node 1"))
    now[0] = 29.0
    assert not repeats.filter(record("aiokafka", "Unable connect to node 1"))
    assert repeats.filter(record("aiokafka", "Unable connect to node 2"))
    assert repeats.filter(record("herder", "Unable connect to node 1"))
    now[0] = 30.5
    assert repeats.filter(record("aiokafka", "Unable connect to node 1"))
