"""A member holds its next JoinGroup a moment after a round others took too."""

from __future__ import annotations

import pytest

from herder.member.sync_grace import SYNC_GRACE_S, join_hold_s


@pytest.mark.parametrize(
    ("now_s", "synced_at_s", "hold_s"),
    [
        (100.0, None, 0.0),
        (100.0, 100.0, SYNC_GRACE_S),
        (100.5, 100.0, SYNC_GRACE_S - 0.5),
        (100.0 + SYNC_GRACE_S, 100.0, 0.0),
        (200.0, 100.0, 0.0),
    ],
)
def test_a_join_waits_out_the_grace_after_the_last_shared_round(
    now_s: float, synced_at_s: float | None, hold_s: float
) -> None:
    assert join_hold_s(now_s, synced_at_s) == pytest.approx(hold_s)
