"""A producer that keeps sending while a test changes the cluster under it (a rescale, a
restart), so the change meets records in flight, not a quiet topic."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping

from tests.support.kafka_topics import keyed
from worker.kafka.client import BlockingKafka, Outgoing

Encode = Callable[[Iterable[int]], list[Outgoing]]
"""Records numbered `n`, as a topic's consumer expects them (`keyed` by default)."""


class Producer(threading.Thread):
    """Sends records numbered 0, 1, ... in bursts of `burst` every `pause_s` seconds,
    the same numbers to each topic (encoded as that topic wants), until `finish`;
    `sent` counts the records every topic has."""

    def __init__(
        self,
        bootstrap_servers: str,
        topics: Mapping[str, Encode] | str,
        burst: int = 40,
        pause_s: float = 0.1,
    ) -> None:
        super().__init__(daemon=True)
        self._bootstrap_servers = bootstrap_servers
        self._topics = {topics: keyed} if isinstance(topics, str) else dict(topics)
        self._burst = burst
        self._pause_s = pause_s
        self._done = threading.Event()
        self.sent = 0

    def run(self) -> None:
        with BlockingKafka(self._bootstrap_servers, "running-producer") as kafka:
            while not self._done.is_set():
                numbers = range(self.sent, self.sent + self._burst)
                for topic, encode in self._topics.items():
                    kafka.publish(topic, encode(numbers))
                self.sent += self._burst
                time.sleep(self._pause_s)

    def finish(self) -> int:
        """Stops sending; how many records each topic got."""
        self._done.set()
        self.join(30)
        return self.sent
