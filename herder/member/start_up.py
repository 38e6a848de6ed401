"""A worker's start-up before its first join (the warm-up and the static-membership probe),
and the log line that says when it is ready."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from herder.member.lifecycle_messages import Prepared
from herder.member.membership import Membership
from herder.tasks.work import LocalWork

log = logging.getLogger(__name__)

STATIC_PROBE_TIMEOUT_S = 60.0
"""Two rounds in a group of one: well under a second on Apache Kafka, 5-20 s on Tansu."""


class StartUp:
    def __init__(self, member: Membership, work: LocalWork, clock: Callable[[], float]) -> None:
        self._member = member
        self._work = work
        self._clock = clock
        self._starting_since: float | None = None
        """When the loop began, until the worker first turned ready."""
        self._warm_up_took = "no warm-up"

    def begin(self) -> None:
        self._starting_since = self._clock()

    async def prepare(self, warm_up: bool, probe_static: bool) -> Prepared:
        """Start Spark before joining: work the group hands this worker (its own tasks
        back after a restart, say) then starts at once instead of after Spark's start-up,
        on CPUs the other workers keep busy. Meanwhile a static member asks whether the
        broker rebalances on its changed subscription (KIP-345); Tansu does not, and a
        member that found out only when a subscription changed switched in the middle of
        a hand-off, whose rounds then outlasted its bound."""
        _, honoured = await asyncio.gather(
            self._warm_up() if warm_up else asyncio.sleep(0),
            self._probe_static() if probe_static else asyncio.sleep(0, None),
        )
        return Prepared(honoured)

    async def _warm_up(self) -> None:
        """A runtime that cannot start is no reason to stay out of the group: the tasks
        it is given report the cause as FAILED."""
        began = self._clock()
        try:
            await self._work.warm_up()
        except Exception:
            log.exception("warming up failed; joining the group anyway")
            self._warm_up_took = f"warm-up failed after {self._clock() - began:.1f} s"
        else:
            log.info("warm after %.1f s; joining the group", self._clock() - began)
            self._warm_up_took = f"warm-up {self._clock() - began:.1f} s"

    async def _probe_static(self) -> bool | None:
        """A probe is advice, never a reason not to join: one that cannot finish keeps
        the member static (the lifecycle's forced rounds still notice later)."""
        try:
            async with asyncio.timeout(STATIC_PROBE_TIMEOUT_S):
                return await self._member.static_rejoin_honoured()
        except Exception as exc:
            log.warning("could not probe the broker's static membership (%r)", exc)
            return None

    def log_turning_ready(self, was: str | None) -> None:
        """One line as `/health` turns 200: a request sent as the REST server starts waits
        for the warm-up and the join (tens of seconds), and the log should say when it
        may be sent, and where the time went."""
        if self._starting_since is None:
            log.info("ready again: /health answers 200 (it was: %s)", was)
            return
        log.info(
            "ready: /health answers 200, %.1f s after start (%s)",
            self._clock() - self._starting_since,
            self._warm_up_took,
        )
        self._starting_since = None
