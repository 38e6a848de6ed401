"""Claims on a task's checkpoint: the newest one owns the task, whoever made it."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from itertools import count
from pathlib import Path

import pytest

from worker.plugins import task_claims
from worker.plugins.task_claims import CLAIMS_DIR, KEPT_CLAIMS, RELEASED_SUFFIX, claim, is_released


def test_a_later_claim_fences_an_earlier_one(tmp_path: Path) -> None:
    first = claim(tmp_path, "a:1", generation=4)
    assert first.epoch == 1 and first.fenced_by() is None
    second = claim(tmp_path, "b:2", generation=5)
    assert second.epoch == 2 and second.fenced_by() is None
    assert first.fenced_by() == "worker b:2 (epoch 2, generation 5)"


def test_epochs_keep_growing_when_the_group_generation_starts_again(tmp_path: Path) -> None:
    before = claim(tmp_path, "a:1", generation=17)
    after = claim(tmp_path, "a:1", generation=1)
    assert after.epoch > before.epoch
    assert after.fenced_by() is None and before.fenced_by() is not None


def test_concurrent_claims_never_share_an_epoch(tmp_path: Path) -> None:
    """Epochs may skip a number: a claimer whose new file was pruned by faster claimers
    before it could check (`_pruned_already`) takes a later one, and nobody holds the
    number it gave up (about 1 run in 150 under this much contention)."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        claims = list(pool.map(lambda i: claim(tmp_path, f"w:{i}", 1), range(40)))
    epochs = [c.epoch for c in claims]
    assert len(set(epochs)) == len(epochs) == 40
    assert [c for c in claims if c.fenced_by() is None] == [max(claims, key=lambda c: c.epoch)]


def test_a_claimer_that_read_the_newest_epoch_before_it_was_pruned_takes_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(KEPT_CLAIMS + 4):
        claim(tmp_path, "a:1", 1)
    newest_reads = iter([3])
    real_newest = task_claims._newest_epoch
    monkeypatch.setattr(
        task_claims, "_newest_epoch", lambda d: next(newest_reads, None) or real_newest(d)
    )

    late = claim(tmp_path, "b:2", 1)

    assert late.epoch == KEPT_CLAIMS + 5
    assert late.fenced_by() is None
    assert not (tmp_path / CLAIMS_DIR / f"{4:012d}").exists()


def test_a_reset_checkpoint_fences_claims_made_before_it(tmp_path: Path) -> None:
    tokens = (f"token-{i}" for i in count())
    stale = claim(tmp_path, "a:1", 3, new_token=lambda: next(tokens))
    shutil.rmtree(tmp_path / CLAIMS_DIR)
    assert stale.fenced_by() == "nobody: the checkpoint was removed"
    fresh = claim(tmp_path, "b:2", 4, new_token=lambda: next(tokens))
    assert fresh.epoch == stale.epoch == 1
    assert fresh.fenced_by() is None
    assert stale.fenced_by() == "worker b:2 (epoch 1, generation 4)"


def test_old_claims_are_pruned(tmp_path: Path) -> None:
    for _ in range(KEPT_CLAIMS * 3):
        newest = claim(tmp_path, "a:1", 1)
    assert len(list((tmp_path / CLAIMS_DIR).iterdir())) == KEPT_CLAIMS
    assert newest.fenced_by() is None


def test_a_task_is_released_when_never_claimed_or_when_its_newest_claim_is(
    tmp_path: Path,
) -> None:
    assert is_released(tmp_path)
    first = claim(tmp_path, "a:1", generation=1)
    assert not is_released(tmp_path)
    first.release()
    assert is_released(tmp_path)
    second = claim(tmp_path, "b:2", generation=1)
    assert not is_released(tmp_path)
    first.release()
    assert not is_released(tmp_path)
    second.release()
    assert is_released(tmp_path)


def test_a_release_marker_is_no_claim_and_leaves_with_its_claim(tmp_path: Path) -> None:
    """A released claim still fences its worker once a newer one exists, and pruning
    removes the markers of the claims it removes."""
    released = claim(tmp_path, "a:1", generation=1)
    released.release()
    later = [claim(tmp_path, "b:2", generation=2) for _ in range(KEPT_CLAIMS)]
    assert later[0].epoch == released.epoch + 1
    assert released.fenced_by() is not None
    names = sorted(p.name for p in (tmp_path / CLAIMS_DIR).iterdir())
    assert not any(name.endswith(RELEASED_SUFFIX) for name in names)
