"""The collector pause around a round: restored afterwards, survivors promoted, no leak."""

from __future__ import annotations

import gc
import weakref

from herder.assignor.gc_pause import gc_paused


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_the_collector_is_off_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_the_round_built_is_in_the_oldest_generation_afterwards() -> None:
    with gc_paused():
        survivor = _Node()
    assert any(o is survivor for o in gc.get_objects(generation=2))


def test_a_cycle_made_during_the_round_is_still_collected() -> None:
    with gc_paused():
        first, second = _Node(), _Node()
        first.other, second.other = second, first
        watch = weakref.ref(first)
        del first, second
    assert watch() is not None
    gc.collect()
    assert watch() is None
