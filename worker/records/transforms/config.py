"""A connector's `transforms` and `predicates` keys read into a chain, checked as Connect
checks them and then some: every problem is a `ConfigProblem` on the key at fault
(`transforms.<alias>.<setting>`), so a bad chain is a 400 at create and an error in
`/config/validate`, never a task that fails later or a transform silently skipped.

Values are read as Connect's `ConfigDef` reads them (`STRING` trimmed, `LIST` split on
commas, `BOOLEAN` `true`/`false` in any case, `INT` a Java int). Beyond Connect: a key
under `transforms.<alias>.` or `predicates.<alias>.` that the class does not define is
refused (a typo such as `transforms.mask.field` would otherwise mask nothing), and the
checks Connect makes only when a task configures its transforms (a Cast spec, a
SimpleDateFormat pattern) are made here, before the config is stored. What needs the
records' types (a field the key or value lacks) or a JVM (a Java regular expression) is
checked when the chain is built (`worker.records.transforms.chain`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from worker.plugins.api import JAVA_INT_MAX, ConfigProblem, ConnectorConfigError
from worker.plugins.versions import version_problem
from worker.records.transforms.catalog import PLUGINS, find
from worker.records.transforms.class_checks import CLASS_CHECKS, LEGACY_SETTINGS
from worker.records.transforms.definitions import (
    NEGATE,
    PLUGIN_VERSION,
    PREDICATE,
    PREDICATES_KEY,
    TRANSFORMS_KEY,
    TYPE,
    Plugin,
    Setting,
)

Value = str | bool | int | tuple[str, ...] | None
CASE_INSENSITIVE_CHOICES: Final = frozenset(
    {"field.syntax.version", "delete.tombstone.handling.mode"}
)
"""Settings whose validator ignores case (Connect's CaseInsensitiveValidString, Debezium's
enum parse)."""
NOT_EMPTY: Final = frozenset(
    {
        ("HasHeaderKey", "name"),
        ("TopicNameMatches", "pattern"),
        ("MaskField", "replacement"),
    }
)
"""String settings Connect's validator refuses empty (its NonEmptyString)."""


@dataclass(frozen=True)
class Configured:
    """A transform or predicate class with its settings read (defaults filled in)."""

    alias: str
    plugin: Plugin
    values: Mapping[str, Value]
    kind: str
    """`transforms` or `predicates`: the key its settings live under."""

    def key(self, name: str) -> str:
        """The connector config key of one of its settings."""
        return f"{self.kind}.{self.alias}.{name}"

    @property
    def family(self) -> str:
        """The class's simple name without its `$Key`/`$Value` part (`Cast`)."""
        return self.plugin.simple_name.split("$", 1)[0]

    def text(self, name: str) -> str | None:
        value = self.values.get(name)
        assert value is None or isinstance(value, str)
        return value

    def items(self, name: str) -> tuple[str, ...]:
        value = self.values.get(name)
        assert isinstance(value, tuple)
        return value

    def flag(self, name: str) -> bool:
        value = self.values.get(name)
        assert isinstance(value, bool)
        return value

    def number(self, name: str) -> int | None:
        value = self.values.get(name)
        assert value is None or isinstance(value, int)
        return value

    @property
    def label(self) -> str:
        """How an error names it: `transforms.mask (MaskField$Value)`."""
        return f"{self.kind}.{self.alias} ({self.plugin.simple_name})"


@dataclass(frozen=True)
class Stage:
    """One transform of the chain and the predicate that decides where it applies."""

    transform: Configured
    predicate: Configured | None = None
    negate: bool = False


@dataclass(frozen=True)
class Chain:
    stages: tuple[Stage, ...] = field(default=())

    def __bool__(self) -> bool:
        return bool(self.stages)

    def __iter__(self) -> Iterator[Stage]:
        return iter(self.stages)


def is_chain_key(key: str) -> bool:
    """A key of Connect's transforms and predicates settings."""
    return any(
        key == kind or key.startswith(f"{kind}.") for kind in (TRANSFORMS_KEY, PREDICATES_KEY)
    )


def aliases(config: Mapping[str, str], kind: str) -> list[str]:
    """The aliases `transforms` or `predicates` lists, as Connect splits a LIST."""
    text = config.get(kind, "").strip()
    return [alias.strip() for alias in text.split(",")] if text else []


def parse_chain(config: Mapping[str, str]) -> Chain:
    """The chain `config` configures (an empty one without `transforms`), or a
    `ConnectorConfigError` naming every problem by its key."""
    problems: list[ConfigProblem] = []
    predicates = {
        alias: configured
        for alias in _unique(config, PREDICATES_KEY, problems)
        if (configured := _configured(config, PREDICATES_KEY, alias, "predicate", problems))
    }
    stages = []
    for alias in _unique(config, TRANSFORMS_KEY, problems):
        transform = _configured(config, TRANSFORMS_KEY, alias, "transformation", problems)
        predicate, negate = _predicate(config, alias, predicates, problems)
        if transform is not None:
            stages.append(Stage(transform, predicate, negate))
    if problems:
        raise ConnectorConfigError(problems)
    return Chain(tuple(stages))


def chain_problems(config: Mapping[str, str]) -> list[ConfigProblem]:
    try:
        parse_chain(config)
    except ConnectorConfigError as exc:
        return list(exc.problems)
    return []


def no_chain_problems(config: Mapping[str, str], connector: str) -> list[ConfigProblem]:
    """For a connector whose records no chain can reach: `transforms` and `predicates`
    are a problem rather than ignored."""
    return [
        ConfigProblem(
            key,
            f"{connector} has no Kafka records for transforms to change (use it without "
            "transforms and predicates)",
        )
        for key in (TRANSFORMS_KEY, PREDICATES_KEY)
        if aliases(config, key)
    ]


def routed_topics(config: Mapping[str, str]) -> dict[str, list[str]]:
    """The topics routers of a valid chain name outright (a RegexRouter's replacement
    without a group reference, a TimestampRouter's format without `${topic}` or
    `${timestamp}`), by the key that names them: held, as every topic a config names, to
    the rule that no connector touches the worker's own topics."""
    named: dict[str, list[str]] = {}
    for stage in parse_chain(config):
        configured = stage.transform
        if configured.family == "RegexRouter":
            replacement = configured.text("replacement") or ""
            if not set("$\\") & set(replacement):
                named[configured.key("replacement")] = [replacement]
        elif configured.family == "TimestampRouter":
            topic_format = configured.text("topic.format") or ""
            if "${topic}" not in topic_format and "${timestamp}" not in topic_format:
                named[configured.key("topic.format")] = [topic_format]
    return named


def _unique(config: Mapping[str, str], kind: str, problems: list[ConfigProblem]) -> list[str]:
    listed = aliases(config, kind)
    if "" in listed:
        problems.append(ConfigProblem(kind, "an alias is empty (two commas in a row?)"))
    if len(set(listed)) < len(listed):
        problems.append(ConfigProblem(kind, "Duplicate alias provided."))
    return [alias for alias in dict.fromkeys(listed) if alias]


def _configured(
    config: Mapping[str, str],
    kind: str,
    alias: str,
    wanted: str,
    problems: list[ConfigProblem],
) -> Configured | None:
    prefix = f"{kind}.{alias}."
    type_key = f"{prefix}{TYPE}"
    named = config.get(type_key, "").strip()
    plugin = find(named) if named else None
    if not named:
        problems.append(ConfigProblem(type_key, f"missing: the class of the {wanted} {alias!r}"))
        return None
    if plugin is None or plugin.type != wanted:
        problems.append(ConfigProblem(type_key, _unknown_class(named, wanted)))
        return None
    framework = {TYPE, PLUGIN_VERSION, *((PREDICATE, NEGATE) if kind == TRANSFORMS_KEY else ())}
    given = {key[len(prefix) :]: value for key, value in config.items() if key.startswith(prefix)}
    if (required := given.get(PLUGIN_VERSION)) is not None and (
        wrong := version_problem(required, f"Plugin {plugin.class_name}", plugin.version)
    ) is not None:
        problems.append(ConfigProblem(f"{prefix}{PLUGIN_VERSION}", wrong))
    values: dict[str, Value] = {}
    for name in sorted(set(given) - framework):
        setting = plugin.setting(name)
        if setting is None and name not in LEGACY_SETTINGS.get(plugin.simple_name, ()):
            problems.append(ConfigProblem(f"{prefix}{name}", _unknown_setting(plugin, name)))
    for name in LEGACY_SETTINGS.get(plugin.simple_name, ()):
        values[name] = given[name].strip() if name in given else None
    for setting in plugin.settings:
        problem, value = _read(plugin, setting, given.get(setting.name))
        if problem is not None:
            problems.append(ConfigProblem(f"{prefix}{setting.name}", problem))
        values[setting.name] = value
    configured = Configured(alias, plugin, values, kind)
    check = CLASS_CHECKS.get(configured.family)
    if check is not None and not any(p.key.startswith(prefix) for p in problems):
        problems += check(configured, {k: v for k, v in given.items() if k not in framework})
    return configured


def _predicate(
    config: Mapping[str, str],
    alias: str,
    predicates: Mapping[str, Configured],
    problems: list[ConfigProblem],
) -> tuple[Configured | None, bool]:
    prefix = f"{TRANSFORMS_KEY}.{alias}."
    named = config.get(f"{prefix}{PREDICATE}")
    negate_text = config.get(f"{prefix}{NEGATE}")
    negate = False
    if negate_text is not None:
        if negate_text.strip().lower() not in ("true", "false"):
            problems.append(ConfigProblem(f"{prefix}{NEGATE}", _invalid(negate_text, "a boolean")))
        negate = negate_text.strip().lower() == "true"
        if named is None:
            problems.append(
                ConfigProblem(
                    f"{prefix}{NEGATE}",
                    f"given, but there is no {prefix}{PREDICATE} defining a predicate to negate",
                )
            )
    if named is None or not named.strip():
        return None, negate
    predicate = predicates.get(named.strip())
    if predicate is None:
        listed = ", ".join(predicates) or "none"
        problems.append(
            ConfigProblem(
                f"{prefix}{PREDICATE}",
                f"{named.strip()!r} is not a predicate alias listed in {PREDICATES_KEY} "
                f"(listed: {listed})",
            )
        )
    return predicate, negate


def _read(plugin: Plugin, setting: Setting, text: str | None) -> tuple[str | None, Value]:
    """The problem with one setting's value, if any, and the value as read."""
    if text is None:
        if setting.required:
            return "missing required value", None
        text = setting.default
        if text is None:
            return None, None
    trimmed = text.strip()
    if setting.type == "LIST":
        listed = tuple(item.strip() for item in trimmed.split(",")) if trimmed else ()
        if not listed and setting.required:
            return "Empty list", listed
        return None, listed
    if setting.type == "BOOLEAN":
        if trimmed.lower() not in ("true", "false"):
            return _invalid(text, "true or false"), False
        return None, trimmed.lower() == "true"
    if setting.type == "INT":
        if not trimmed.lstrip("+-").isdecimal() or abs(int(trimmed)) > JAVA_INT_MAX:
            return _invalid(text, "a 32-bit integer"), None
        return None, int(trimmed)
    if setting.choices:
        return _choice(setting, trimmed)
    if not trimmed and (plugin.simple_name.split("$")[0], setting.name) in NOT_EMPTY:
        return "must not be empty", trimmed
    return None, trimmed


def _choice(setting: Setting, text: str) -> tuple[str | None, Value]:
    if setting.name in CASE_INSENSITIVE_CHOICES:
        match = next((c for c in setting.choices if c.lower() == text.lower()), None)
    else:
        match = text if text in setting.choices else None
    if match is None:
        return _invalid(text, f"one of {', '.join(setting.choices)}"), text
    return None, match


def _invalid(text: str, wanted: str) -> str:
    return f"invalid value {text!r}: {wanted}"


def _unknown_class(named: str, wanted: str) -> str:
    known: Sequence[str] = [p.simple_name for p in PLUGINS.values() if p.type == wanted]
    other = find(named)
    if other is not None:
        return f"{named} is a {other.type}, not a {wanted}"
    return (
        f"{named} is not a {wanted} this worker runs (class names as Kafka Connect's and "
        f"Debezium's; the simple names: {', '.join(known)})"
    )


def _unknown_setting(plugin: Plugin, name: str) -> str:
    known = ", ".join(s.name for s in plugin.settings) or "none"
    return f"not a setting of {plugin.simple_name}; its settings: {known}"
