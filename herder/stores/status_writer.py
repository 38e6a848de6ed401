"""The statuses this worker reports, written to the status topic one after another, in
the order they happened, by one task: a write never waits for the broker in the group
loop, and a stop written late cannot overtake the start that followed it."""

from __future__ import annotations

import asyncio
import logging

from herder.cancellation import cancel_and_wait
from herder.stores.status_store import Status, StatusStore
from protocol.messages import ConnectorTaskId

log = logging.getLogger(__name__)


class StatusWriter:
    def __init__(self, statuses: StatusStore) -> None:
        self._statuses = statuses
        self._queue: asyncio.Queue[tuple[str | ConnectorTaskId, Status]] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None

    def put(self, item: str | ConnectorTaskId, status: Status) -> None:
        self._queue.put_nowait((item, status))

    def start(self) -> None:
        self._writer = asyncio.create_task(self._write(), name="status-writer")

    async def flush(self, timeout_s: float) -> bool:
        """Until every status put so far is written and acknowledged; False when the
        broker did not take them within `timeout_s`."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._queue.join()
        except TimeoutError:
            return False
        return True

    async def close(self, flush_timeout_s: float) -> None:
        """Write what is queued (up to `flush_timeout_s`), then stop writing."""
        if not await self.flush(flush_timeout_s):
            log.warning("gave up writing the last statuses: the broker does not answer")
        await cancel_and_wait(self._writer)

    async def _write(self) -> None:
        while True:
            item, status = await self._queue.get()
            try:
                if isinstance(item, ConnectorTaskId):
                    await self._statuses.put_task(item, status)
                else:
                    await self._statuses.put_connector(item, status)
            except Exception:
                log.exception("could not write the status of %s", item)
            finally:
                self._queue.task_done()
