"""The pause between failed group rounds (pure)."""

from __future__ import annotations

import pytest

from herder.member.group_errors import MAX_ROUND_BACKOFF_S, round_backoff_s


@pytest.mark.parametrize(
    ("failed", "pause"),
    [(0, 0.0), (1, 0.0), (2, 0.5), (3, 1.0), (4, 2.0), (8, 30.0), (60, MAX_ROUND_BACKOFF_S)],
)
def test_one_failure_is_retried_at_once_then_the_pause_doubles_to_a_cap(
    failed: int, pause: float
) -> None:
    assert round_backoff_s(failed, 0.5, 1.0) == pause


def test_jitter_spreads_members_that_failed_together() -> None:
    assert round_backoff_s(3, 0.5, 0.8) < round_backoff_s(3, 0.5, 1.2)
