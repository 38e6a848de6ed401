"""The transforms and predicates a connector config may name, with their settings as
Connect's `ConfigDef` declares them (name, type, default, importance), so that a config
is checked, and the plugin listing answers, as Kafka Connect 4.1.1 and Debezium 3.6.1
do. Pure data: no Spark here, so the REST layer can list it cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from worker.records.transforms.connect_classes import SINGLE, sided
from worker.records.transforms.debezium_classes import EXTRACT_NEW_RECORD_STATE
from worker.records.transforms.definitions import (
    NEGATE,
    PREDICATE,
    PREDICATES_KEY,
    TRANSFORMS_KEY,
    TYPE,
    Plugin,
    Setting,
)

__all__ = ["PLUGINS", "Plugin", "Setting", "chain_definitions", "find"]

PLUGINS: Final[Mapping[str, Plugin]] = {
    plugin.class_name: plugin
    for plugin in sorted([*sided(), *SINGLE, EXTRACT_NEW_RECORD_STATE], key=lambda p: p.class_name)
}
"""Every class a chain may name, by its full class name."""

_SIMPLE_NAMES: Final = {plugin.simple_name: plugin for plugin in PLUGINS.values()}


def find(class_name: str) -> Plugin | None:
    """The plugin a `type` setting names: a full class name, or its simple name
    (`MaskField$Value`)."""
    name = class_name.strip()
    return PLUGINS.get(name) or _SIMPLE_NAMES.get(name)


def transformations() -> list[Plugin]:
    return [p for p in PLUGINS.values() if p.type == "transformation"]


def predicates() -> list[Plugin]:
    return [p for p in PLUGINS.values() if p.type == "predicate"]


FRAMEWORK_SETTINGS: Final = (
    Setting(
        TRANSFORMS_KEY,
        "LIST",
        "LOW",
        "Aliases of the transforms to apply, in order.",
        default="",
    ),
    Setting(
        PREDICATES_KEY,
        "LIST",
        "LOW",
        "Aliases of the predicates the transforms use.",
        default="",
    ),
)
"""The keys every connector with a chain has: Connect's `transforms` and `predicates`."""
STAGE_SETTINGS: Final = (
    Setting(
        PREDICATE,
        "STRING",
        "MEDIUM",
        "The alias of the predicate that decides whether this transform applies.",
    ),
    Setting(
        NEGATE, "BOOLEAN", "MEDIUM", "Apply where the predicate is false instead.", default="false"
    ),
)
"""The settings Connect adds to every transform: `transforms.<alias>.predicate`, `.negate`."""


def aliases(config: Mapping[str, str], key: str) -> list[str]:
    """The aliases a `transforms` or `predicates` value lists, in order, as Connect splits
    a LIST (commas, surrounding spaces dropped, an empty value none)."""
    text = config.get(key, "")
    return [alias.strip() for alias in text.split(",")] if text.strip() else []


def chain_definitions(config: Mapping[str, str]) -> list[tuple[str, Setting]]:
    """The settings `config`'s chain defines, by their full keys, as Connect enriches a
    connector's definition: `transforms`, `predicates`, then per alias its `type`, the
    settings of the class it names (when known), and for a transform `predicate` and
    `negate`."""
    found: list[tuple[str, Setting]] = [(s.name, s) for s in FRAMEWORK_SETTINGS]
    for kind, extra in ((TRANSFORMS_KEY, STAGE_SETTINGS), (PREDICATES_KEY, ())):
        for alias in dict.fromkeys(aliases(config, kind)):
            prefix = f"{kind}.{alias}."
            doc = f"The class of the {alias!r} {kind[:-1]}."
            found.append((f"{prefix}{TYPE}", Setting(TYPE, "STRING", "HIGH", doc, required=True)))
            plugin = find(config.get(f"{prefix}{TYPE}", ""))
            own = plugin.settings if plugin is not None else ()
            found += [(f"{prefix}{s.name}", s) for s in (*own, *extra)]
    return found
