"""What a transform or predicate class and its settings are, as Connect's `ConfigDef`
describes them; the classes themselves are listed in `connect_classes` and
`debezium_classes`, and looked up through `catalog`.

A default is given as Connect's REST API writes it (`ConfigDef.convertToString`): an
empty list is `""`, a boolean `"true"`/`"false"`, no default at all is `required`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

SettingType = Literal["STRING", "LIST", "BOOLEAN", "INT"]
Importance = Literal["HIGH", "MEDIUM", "LOW"]
PluginType = Literal["transformation", "predicate"]
Side = Literal["Key", "Value"]

KAFKA_VERSION: Final = "4.1.1"
DEBEZIUM_VERSION: Final = "3.6.1.Final"
TRANSFORMS: Final = "org.apache.kafka.connect.transforms."
PREDICATES: Final = f"{TRANSFORMS}predicates."
DEBEZIUM: Final = "io.debezium.transforms."

TRANSFORMS_KEY: Final = "transforms"
PREDICATES_KEY: Final = "predicates"
TYPE: Final = "type"
PREDICATE: Final = "predicate"
NEGATE: Final = "negate"
PLUGIN_VERSION: Final = "plugin.version"
"""KIP-891: the version of the class a transform or predicate must be, a Maven range
(`worker.plugins.versions`); the worker has one of each, so it admits that or is a 400."""


@dataclass(frozen=True)
class Setting:
    """One setting of a transform or predicate, as Connect's `ConfigDef.ConfigKey`."""

    name: str
    type: SettingType
    importance: Importance
    documentation: str
    default: str | None = None
    """The default as Connect's REST API shows it; None: null (or required)."""
    required: bool = False
    choices: tuple[str, ...] = ()
    """The values Connect's validator accepts, when it names them."""


@dataclass(frozen=True)
class Plugin:
    """A transform or predicate class and its settings."""

    class_name: str
    type: PluginType
    summary: str
    settings: tuple[Setting, ...] = ()
    version: str = KAFKA_VERSION
    side: Side | None = None
    """What a class Connect has in a key and a value form (`Cast$Key`, `Cast$Value`)
    works on; None for the others."""

    @property
    def simple_name(self) -> str:
        return self.class_name.rsplit(".", 1)[-1]

    def setting(self, name: str) -> Setting | None:
        return next((s for s in self.settings if s.name == name), None)


NULL_DEFAULT: Final = Setting(
    "replace.null.with.default",
    "BOOLEAN",
    "MEDIUM",
    "Whether a null field that has a default in its schema reads as that default (true) "
    "or as null (false). Spark types carry no defaults, so both read null.",
    default="true",
)


def required(name: str, kind: SettingType, importance: Importance, doc: str) -> Setting:
    return Setting(name, kind, importance, doc, required=True)


def optional_field(name: str, what: str) -> Setting:
    return Setting(
        name,
        "STRING",
        "MEDIUM",
        f"The field to put {what} in; a trailing `!` makes it a required field, a "
        "trailing `?` (the default) an optional one.",
    )
