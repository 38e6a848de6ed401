"""The Kafka topics that belong to the worker, and the rule that keeps every connector
off them.

The config topic holds every connector's config (a literal password included, when a
user gave one), the status topic every task's state, the offsets topic the sources'
positions; the broker's own topics hold consumer groups' offsets and transactions'
state. A connector that reads one of them leaks what it holds, and one that writes one
forges it: a connector record that points another connector's `connection.url` at the
caller's host, a target state that stops it. So no connector names one, by whichever key
(`topics`, `topic`, a `topic.prefix` that makes one, a dead letter queue) and whichever
cluster its `kafka.bootstrap.servers` names: the same broker answers under other names.

Each worker hands its own names to every plugin in the resolved config, under
`INTERNAL_TOPICS_KEY` (never stored, and the worker's value always wins over a
connector's), so a plugin that picks topics by pattern (`topics.regex`) leaves them out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from worker.plugins.api import ConfigProblem

BROKER_TOPICS: Final = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}
)
"""Apache Kafka's own topics: group offsets, transactions, share groups, KRaft metadata."""
INTERNAL_TOPICS_KEY: Final = "worker.internal.topics"


def internal_topics(config: Mapping[str, str]) -> frozenset[str]:
    """The worker's own topics as a resolved config carries them, with the broker's."""
    given = config.get(INTERNAL_TOPICS_KEY, "")
    return BROKER_TOPICS | {topic for topic in given.split(",") if topic}


def internal_topic_problems(
    named: Mapping[str, Iterable[str]], internal: frozenset[str]
) -> list[ConfigProblem]:
    """A problem for each key of `named` (a config key and the topics it names) that
    names one of the `internal` topics."""
    problems = []
    for key, topics in named.items():
        taken = sorted({topic for topic in topics if topic in internal})
        if taken:
            problems.append(
                ConfigProblem(
                    key,
                    f"names {', '.join(repr(t) for t in taken)}, a topic of the worker or "
                    "of the broker itself: no connector reads, writes or dead-letters there",
                )
            )
    return problems
