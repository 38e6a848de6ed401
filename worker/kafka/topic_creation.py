"""Which topics a source connector may create, and how: Kafka Connect's topic creation
(KIP-158) as a pure decision over the connector's config.

A connector that sets `topic.creation.default.partitions` and
`topic.creation.default.replication.factor` has its missing topics created, when its
worker allows it (`topic.creation.enable`, default true). Further groups, listed in
`topic.creation.groups`, take the topics their `include` regexes match and their
`exclude` regexes do not; the first listed group that takes a topic decides its
partitions, replication factor and topic configs, else the `default` group does. A group
without its own partitions or replication factor gets the default group's (Connect's
rule); its topic configs are its own only (Connect's too).

Every value is a REST caller's, so every one is checked before anything runs: counts are
bounded, regexes are RE2's, which matches in linear time (Python's `re` could be made to
backtrack for hours, holding the GIL and with it the whole worker), and a key that names
a group nobody listed is refused rather than silently ignored. The I/O (describe, create)
is `worker.kafka.topic_admin`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from worker.plugins.api import ConfigProblem, ConnectorConfigError
from worker.plugins.topic_patterns import compiled_pattern, pattern_problem

PREFIX: Final = "topic.creation."
GROUPS_KEY: Final = "topic.creation.groups"
ENABLE_KEY: Final = "topic.creation.enable"
"""The worker key; a connector cannot set it."""
DEFAULT_GROUP: Final = "default"
INCLUDE: Final = "include"
EXCLUDE: Final = "exclude"
PARTITIONS: Final = "partitions"
REPLICATION_FACTOR: Final = "replication.factor"
DEFAULT_PARTITIONS_KEY: Final = f"{PREFIX}{DEFAULT_GROUP}.{PARTITIONS}"
DEFAULT_REPLICATION_FACTOR_KEY: Final = f"{PREFIX}{DEFAULT_GROUP}.{REPLICATION_FACTOR}"

BROKER_DEFAULT: Final = -1
"""A partition count or replication factor of -1 leaves it to the broker's
`num.partitions` / `default.replication.factor`, as in Connect."""
MAX_PARTITIONS: Final = 10_000
"""Apache Kafka refuses to create about this many partitions in one request anyway, and
the embedded broker (Tansu) aborts on a count near 2**31 instead of refusing it."""
MAX_REPLICATION_FACTOR: Final = 2**15 - 1
"""The protocol's replication factor is an int16 (Connect reads it as a Java short)."""
MAX_PATTERNS: Final = 100
"""Include and exclude regexes of one connector, all groups together."""

_GROUP_NAME = re.compile(r"[A-Za-z0-9_-]+")
_SETTING_NAME = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,12}")


@dataclass(frozen=True)
class NewTopicSpec:
    """A topic to create: what a CreateTopics request says, and which settings said it
    (`origin`, named when the broker refuses). Reusable by anything that creates a
    topic, e.g. a dead letter queue with its own replication factor."""

    name: str
    partitions: int = BROKER_DEFAULT
    replication_factor: int = BROKER_DEFAULT
    configs: tuple[tuple[str, str], ...] = ()
    origin: str = ""

    def describe(self, *, values: bool = True) -> str:
        """For an error (whose secrets the runtime hides) or, without the configs'
        values, which may come from a secret's placeholder, for a log line."""

        def count(value: int) -> str:
            return "the broker's default" if value == BROKER_DEFAULT else str(value)

        configs = ", ".join(f"{key}={value}" if values else key for key, value in self.configs)
        return (
            f"{count(self.partitions)} partitions, replication factor "
            f"{count(self.replication_factor)}" + (f", configs {configs}" if configs else "")
        )


@dataclass(frozen=True)
class TopicCreationGroup:
    """One group's rule: which topic names it takes, and the topic it makes of one."""

    name: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...]

    def matches(self, topic: str) -> bool:
        """Whole-name matches, as Java's `Pattern.matches` in Connect: exclude wins."""
        return any(compiled_pattern(p).fullmatch(topic) for p in self.include) and not any(
            compiled_pattern(p).fullmatch(topic) for p in self.exclude
        )

    def new_topic(self, topic: str) -> NewTopicSpec:
        return NewTopicSpec(
            topic,
            self.partitions,
            self.replication_factor,
            self.configs,
            origin=f"{PREFIX}{self.name}.*",
        )


@dataclass(frozen=True)
class TopicCreation:
    """A connector's topic creation rules: its listed groups, in order, then `default`."""

    groups: tuple[TopicCreationGroup, ...]
    default: TopicCreationGroup

    def group_for(self, topic: str) -> TopicCreationGroup:
        return next((group for group in self.groups if group.matches(topic)), self.default)

    def new_topic(self, topic: str) -> NewTopicSpec:
        return self.group_for(topic).new_topic(topic)


def topic_creation(config: Mapping[str, str]) -> TopicCreation | None:
    """The connector's rules, or None when it sets no `topic.creation.*` key (then it
    creates nothing). Once it sets any, the default group's partitions and replication
    factor are required, as in Connect. Raises `ConnectorConfigError` naming every
    offending key."""
    keys = {key: value for key, value in config.items() if key.startswith(PREFIX)}
    if not keys:
        return None
    parser = _Parser(keys)
    groups = parser.listed_groups()
    parser.check_keys(groups)
    default = parser.default_group()
    listed = tuple(parser.group(name, default) for name in groups)
    if parser.problems:
        raise ConnectorConfigError(parser.problems)
    return TopicCreation(listed, default)


def missing_topic_message(topic: str, servers: str, *, worker_enabled: bool) -> str:
    """Why a task stops at a topic that does not exist, and the keys that would create it."""
    keys = f"{DEFAULT_PARTITIONS_KEY} and {DEFAULT_REPLICATION_FACTOR_KEY}"
    if worker_enabled:
        how = (
            f"create it, or set {keys} on the connector (e.g. 1 and -1, the broker's "
            "default) so that its tasks create it"
        )
    else:
        how = (
            f"create it: this worker does not create topics ({ENABLE_KEY}=false); with "
            f"{ENABLE_KEY}=true on the workers, a connector that sets {keys} creates it"
        )
    return f"Kafka topic {topic!r} does not exist on {servers}: {how}"


class _Parser:
    """Collects every problem rather than stopping at the first, so one 400 names them
    all."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self.keys = keys
        self.problems: list[ConfigProblem] = []
        self.patterns = 0

    def problem(self, key: str, message: str) -> None:
        self.problems.append(ConfigProblem(key, message))

    def listed_groups(self) -> list[str]:
        seen: list[str] = []
        for name in _items(self.keys.get(GROUPS_KEY, "")):
            if not _GROUP_NAME.fullmatch(name):
                self.problem(
                    GROUPS_KEY,
                    f"invalid group name {name!r}: letters, digits, '_' and '-' only",
                )
            elif name in seen:
                self.problem(GROUPS_KEY, f"group {name!r} is listed twice")
            else:
                seen.append(name)
        # The default group always exists and always comes last, as in Connect.
        return [name for name in seen if name != DEFAULT_GROUP]

    def check_keys(self, groups: list[str]) -> None:
        """Every `topic.creation.*` key belongs to a known group and names a setting."""
        for key in self.keys:
            if key == GROUPS_KEY:
                continue
            if key == ENABLE_KEY:
                self.problem(
                    key,
                    "a worker setting (default true), not a connector's: a connector "
                    f"creates its topics when it sets {DEFAULT_PARTITIONS_KEY} and "
                    f"{DEFAULT_REPLICATION_FACTOR_KEY}",
                )
                continue
            group, _, setting = key[len(PREFIX) :].partition(".")
            if group != DEFAULT_GROUP and group not in groups:
                self.problem(key, f"names group {group!r}, which {GROUPS_KEY} does not list")
            elif not _SETTING_NAME.fullmatch(setting):
                self.problem(key, "names no setting of its group (a topic config name)")
            elif group == DEFAULT_GROUP and setting in (INCLUDE, EXCLUDE):
                self.problem(
                    key,
                    "the default group takes every topic no listed group takes, so it has "
                    f"no {setting}: list a group in {GROUPS_KEY} instead",
                )

    def default_group(self) -> TopicCreationGroup:
        partitions = self.count(DEFAULT_PARTITIONS_KEY, None, MAX_PARTITIONS)
        replication = self.count(DEFAULT_REPLICATION_FACTOR_KEY, None, MAX_REPLICATION_FACTOR)
        return TopicCreationGroup(
            DEFAULT_GROUP,
            (".*",),
            (),
            partitions or BROKER_DEFAULT,
            replication or BROKER_DEFAULT,
            self.configs(DEFAULT_GROUP),
        )

    def group(self, name: str, default: TopicCreationGroup) -> TopicCreationGroup:
        prefix = f"{PREFIX}{name}."
        include_key = f"{prefix}{INCLUDE}"
        include = self.regexes(include_key)
        if not _items(self.keys.get(include_key, "")):
            self.problem(
                include_key,
                f"missing required value: group {name!r} is listed in {GROUPS_KEY}, so "
                "it must say which topics it takes (comma-separated regexes)",
            )
        partitions = self.count(f"{prefix}{PARTITIONS}", default.partitions, MAX_PARTITIONS)
        replication = self.count(
            f"{prefix}{REPLICATION_FACTOR}", default.replication_factor, MAX_REPLICATION_FACTOR
        )
        return TopicCreationGroup(
            name,
            include,
            self.regexes(f"{prefix}{EXCLUDE}"),
            partitions or default.partitions,
            replication or default.replication_factor,
            self.configs(name),
        )

    def count(self, key: str, inherited: int | None, maximum: int) -> int | None:
        """-1 or 1 to `maximum`; `inherited` when unset (None: required)."""
        text = self.keys.get(key)
        if text is None:
            if inherited is None:
                self.problem(
                    key,
                    f"missing required value: topic creation needs {DEFAULT_PARTITIONS_KEY}"
                    f" and {DEFAULT_REPLICATION_FACTOR_KEY} once any {PREFIX}* key is set "
                    "(-1: the broker's default)",
                )
            return inherited
        value = text.strip()
        number = int(value) if _WHOLE_NUMBER.fullmatch(value) else None
        if number is None or not (number == BROKER_DEFAULT or 1 <= number <= maximum):
            self.problem(
                key,
                f"invalid value {text!r}: must be -1 (the broker's default) or a whole "
                f"number from 1 to {maximum}",
            )
            return inherited
        return number

    def regexes(self, key: str) -> tuple[str, ...]:
        found: list[str] = []
        for pattern in _items(self.keys.get(key, "")):
            self.patterns += 1
            if self.patterns > MAX_PATTERNS:
                self.problem(key, f"more than {MAX_PATTERNS} include and exclude regexes in all")
                break
            problem = pattern_problem(pattern)
            if problem is not None:
                self.problem(key, problem)
                continue
            found.append(pattern)
        return tuple(found)

    def configs(self, group: str) -> tuple[tuple[str, str], ...]:
        """The group's other settings, the new topic's configs (`cleanup.policy`, ...)."""
        prefix = f"{PREFIX}{group}."
        own = (INCLUDE, EXCLUDE, PARTITIONS, REPLICATION_FACTOR)
        return tuple(
            sorted(
                (key[len(prefix) :], value)
                for key, value in self.keys.items()
                if key.startswith(prefix)
                and key[len(prefix) :] not in own
                and _SETTING_NAME.fullmatch(key[len(prefix) :])
            )
        )


def _items(text: str) -> list[str]:
    """A Connect list value: comma-separated, each item stripped, empty ones dropped (so a
    regex cannot contain a comma, as in Connect)."""
    return [item.strip() for item in text.split(",") if item.strip()]
