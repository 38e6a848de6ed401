"""Connector configs, task configs and target states, kept on the compacted config topic
(its records and what they say: `herder.stores.config_records`).

Only the leader writes here, after the REST checks; but a record can also come from
whoever else can write the topic. A connector or task config that the worker's own checks
refuse (`Vet`), or a record that is no record of this topic, is therefore not applied:
it is logged and counted (`refused_records`), and the config it would have replaced stays.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from herder.assignor.snapshot import HandedOver
from herder.stores.config_records import (
    CONNECTOR_PREFIX,
    HANDED_OVER_PREFIX,
    LOGGER_PREFIX,
    REBALANCE_REQUEST_KEY,
    TASK_PREFIX,
    ConfigRecord,
    ConfigReplay,
    ConfigSnapshot,
    RestartRequest,
    config_properties,
)
from herder.stores.kafka_log import OpenLog

log = logging.getLogger(__name__)


class Vet(Protocol):
    """Why a connector's or a task's config read from the topic must not be applied (a
    reason that names no resolved secret), or None."""

    def connector(self, name: str, config: Mapping[str, str]) -> str | None: ...

    def task(self, name: str, config: Mapping[str, str]) -> str | None: ...


class AcceptAll:
    """A vet that refuses nothing: for stores whose records only tests write."""

    def connector(self, name: str, config: Mapping[str, str]) -> str | None:
        return None

    def task(self, name: str, config: Mapping[str, str]) -> str | None:
        return None


@dataclass(eq=False)
class _Staged:
    """A record sent, and the task that waits until it is acknowledged and read back."""

    record: ConfigRecord
    durable: asyncio.Task[None]


class ConfigStore:
    """Replays the config topic into a `ConfigSnapshot` and writes changes to it.

    A write is durable once its records are acknowledged and read back. The request
    lane *stages* a batch's records instead (`stage`: sent, not awaited) and makes them
    durable together (`flush`), so a batch of writes costs one acknowledgement and one
    read back, not one each; `planned` is the config as the staged records will leave
    it, which each write of the batch checks against.
    """

    def __init__(self, open_log: OpenLog, vet: Vet | None = None) -> None:
        self._log = open_log(self._apply)
        self._vet = vet or AcceptAll()
        self._replay = ConfigReplay()
        self.refused_records = 0
        """Records read and not applied (`Vet`, or malformed)."""
        self._staged: list[_Staged] = []
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, listener: Callable[[], None]) -> None:
        """`listener` runs after every record read (applied or not), on the event loop."""
        self._listeners.append(listener)

    async def start(self) -> None:
        await self._log.start()

    async def stop(self) -> None:
        for staged in self._staged:
            staged.durable.cancel()
        await self._log.stop()

    async def read_to_end(self, timeout_s: float = 30.0) -> int:
        return await self._log.read_to_end(timeout_s)

    async def catch_up(self) -> None:
        """Read to the end, unless records staged since are still on their way: the
        write that staged them read to the end before, in the same batch of the lane, and
        they are the records that batch added."""
        if not self._staged:
            await self.read_to_end()

    def has_connector(self, name: str) -> bool:
        return name in self._replay.connectors

    def take_restart_requests(self) -> list[RestartRequest]:
        """The restart requests read since the last call, oldest first."""
        taken, self._replay.restart_requests = self._replay.restart_requests, []
        return taken

    def take_logger_levels(self) -> list[tuple[str, str]]:
        """The cluster-wide `(namespace, level)` changes read since the last call, oldest first."""
        taken, self._replay.logger_levels = self._replay.logger_levels, []
        return taken

    def snapshot(self) -> ConfigSnapshot:
        return self._replay.snapshot(self._log.position)

    def planned(self, *more: ConfigRecord) -> ConfigSnapshot:
        """The snapshot with the staged records (and `more`) applied: the config as it
        will be once they are read back. Applying a record already read again changes
        nothing (each sets its key), so a staged record read back early is harmless."""
        if not self._staged and not more:
            return self.snapshot()
        replay = self._replay.copy()
        for record in (*(staged.record for staged in self._staged), *more):
            replay.apply(*record)
        return replay.snapshot(self._log.position)

    async def stage(self, records: list[ConfigRecord]) -> asyncio.Task[None]:
        """Send `records` in order without waiting for them; the task returned ends once
        they are read back (or fails with the broker's refusal), and `flush` waits for
        it too. They leave `planned` then, whether anyone waits or not (a caller may go
        away)."""
        offsets = []
        for key, value in records:
            payload = None if value is None else json.dumps(value, sort_keys=True).encode()
            offsets.append(await self._log.send_soon(key.encode(), payload))
        durable = asyncio.create_task(self._read_back(offsets), name="config-read-back")
        staged = [_Staged(record, durable) for record in records]
        self._staged += staged
        durable.add_done_callback(partial(self._settled, staged))
        return durable

    async def flush(self) -> None:
        """Wait until every record staged before this call is acknowledged and read back.
        Calls that overlap share the wait: they await the same acknowledgements and the
        same reader, with no request of their own. A record the broker refused fails
        every flush that waits for it."""
        waits = {staged.durable for staged in self._staged}
        await asyncio.gather(*(asyncio.shield(wait) for wait in waits))

    async def _read_back(self, offsets: list[asyncio.Future[int]]) -> None:
        acknowledged = await asyncio.gather(*offsets)
        await self._log.read_through(max(acknowledged))

    def _settled(self, staged: list[_Staged], durable: asyncio.Task[None]) -> None:
        self._staged = [s for s in self._staged if s not in staged]
        if not durable.cancelled() and (exc := durable.exception()) is not None:
            log.error("config records not written: %s", exc)

    async def write(self, records: list[ConfigRecord]) -> None:
        """Write `records` and wait until they are read back."""
        await self.stage(records)
        await self.flush()

    async def put_logger_level(self, namespace: str, level: str) -> None:
        await self.write([(LOGGER_PREFIX + namespace, {"level": level})])

    async def request_rebalance(self, generation: int, reason: str) -> None:
        """Advance the config offset so the leader's next JoinGroup carries new metadata.

        A coordinator may answer a rejoin with unchanged metadata from the current
        generation instead of starting a rebalance (Tansu does, even for the leader), so a
        scheduled rebalance needs the leader's subscription to differ. One key, compacted,
        so these records do not accumulate.
        """
        await self.write([(REBALANCE_REQUEST_KEY, {"generation": generation, "reason": reason})])

    async def put_handed_over(self, identity: str, handed: HandedOver | None) -> None:
        """Record (or, with None, clear) what a leaving worker handed over, so that a
        leader elected after the one that planned the hand-over can give it back."""
        value = None
        if handed is not None:
            tasks = {c: sorted(numbers) for c, numbers in sorted(handed.tasks.items())}
            value = {"until-ms": handed.until_ms, "tasks": tasks}
        await self.write([(HANDED_OVER_PREFIX + identity, value)])

    def _apply(self, raw_key: bytes, raw_value: bytes | None, offset: int) -> None:
        try:
            key = raw_key.decode()
            value: dict[str, Any] | None = None if raw_value is None else json.loads(raw_value)
            refusal = self._refusal(key, value)
            if refusal is None:
                self._replay.apply(key, value)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            refusal = f"not a record of this topic ({type(exc).__name__}: {exc})"
        if refusal is not None:
            self.refused_records += 1
            log.error("config topic record at offset %d not applied: %s", offset, refusal)
        for listener in self._listeners:
            listener()

    def _refusal(self, key: str, value: dict[str, Any] | None) -> str | None:
        """Why a connector's or a task's config is not applied (it names the config only
        by its key: the vet's reason carries no resolved secret)."""
        if value is None:
            return None
        if key.startswith(CONNECTOR_PREFIX):
            name = key.removeprefix(CONNECTOR_PREFIX)
            problem = self._vet.connector(name, config_properties(value))
        elif key.startswith(TASK_PREFIX):
            name = key.removeprefix(TASK_PREFIX).rpartition("-")[0]
            problem = self._vet.task(name, config_properties(value))
        else:
            return None
        return None if problem is None else f"{key}: {problem}"
