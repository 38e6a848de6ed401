"""The tests' one polling helper: it returns what it waited for, and when it gives up it
says what it waited for and what it saw last (all a CI log may have to go on)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.support.polling import wait_until, wait_until_async


def answers(*values: object) -> Callable[[], object]:
    """A condition that answers `values` in turn, raising the exceptions among them."""
    queue: Iterator[object] = iter(values)

    def observe() -> object:
        value = next(queue)
        if isinstance(value, Exception):
            raise value
        return value

    return observe


def test_returns_the_first_value_the_condition_accepts() -> None:
    observe = answers(1, 2, 3, 4)
    assert wait_until(observe, 60, what="three", until=lambda n: n == 3, interval_s=0) == 3
    assert observe() == 4, "it looked again after the condition held"


def test_by_default_waits_for_a_truthy_value() -> None:
    assert wait_until(answers([], None, ["row"]), 60, what="a row", interval_s=0) == ["row"]


def test_a_transient_error_is_one_more_not_yet() -> None:
    refused = httpx.ConnectError("connection refused")
    assert wait_until(answers(refused, KeyError("state"), "up"), 60, what="up", interval_s=0)


def test_gives_up_with_what_it_awaited_and_the_last_value_it_saw() -> None:
    with pytest.raises(AssertionError) as failure:
        wait_until(
            answers(["RUNNING", "FAILED"]),
            0,
            what="both tasks RUNNING",
            until=lambda states: states == ["RUNNING"] * 2,
        )
    assert str(failure.value) == (
        "timed out after 0 s waiting for both tasks RUNNING; last seen: ['RUNNING', 'FAILED']"
    )


def test_gives_up_with_the_last_error_when_that_was_the_last_answer() -> None:
    with pytest.raises(AssertionError, match=r"waiting for REST; last seen: ConnectError: refused"):
        wait_until(answers(httpx.ConnectError("refused")), 0, what="REST")


def test_a_long_value_is_cut_in_the_message() -> None:
    with pytest.raises(AssertionError) as failure:
        wait_until(answers("x" * 10_000), 0, what="nothing", until=lambda _: False)
    assert len(str(failure.value)) < 2_100 and str(failure.value).endswith("...")


def test_any_other_error_fails_at_once() -> None:
    with pytest.raises(ZeroDivisionError):
        wait_until(answers(ZeroDivisionError()), 60, what="arithmetic")


async def test_the_async_variant_awaits_a_coroutine_condition() -> None:
    outcomes = iter(["ok", "ok", "rejoin"])

    async def heartbeat() -> str:
        return next(outcomes)

    found = await wait_until_async(
        heartbeat, 60, what="a rebalance", until=lambda o: o == "rejoin", interval_s=0
    )
    assert found == "rejoin"


async def test_the_async_variant_takes_a_plain_condition_and_gives_up_alike() -> None:
    assert await wait_until_async(answers(0, 7), 60, what="a batch", interval_s=0) == 7
    with pytest.raises(AssertionError, match=r"waiting for a batch; last seen: 0$"):
        await wait_until_async(answers(0), 0, what="a batch")
