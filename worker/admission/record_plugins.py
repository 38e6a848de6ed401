"""The plugins of a connector's records that Kafka Connect lists beside its connectors
(`GET /connector-plugins?connectorsOnly=false`): the converters a config may name
(`worker.records.converters.spec`), and the transforms and predicates a chain may name
(`worker.records.transforms.catalog`), each with Connect's plugin type, its version and
its settings as Connect's `ConfigDef` would declare them.

Nothing here is loaded by name from a request: a name finds a plugin only if it is one
of these, by its class name, its simple name or its alias.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Final, Literal

from worker.admission.registry import builtin_version
from worker.records.converters.spec import (
    AVRO_SCHEMA,
    AVRO_SCHEMA_ID,
    AVRO_WIRE_FORMAT,
    CLASS_NAMES,
    SCHEMAS_ENABLE,
    SETTINGS,
    resolve_kind,
)
from worker.records.transforms import catalog
from worker.records.transforms.definitions import Setting

RecordPluginType = Literal["transformation", "predicate", "converter"]
LISTING_ORDER: Final[tuple[RecordPluginType, ...]] = ("transformation", "predicate", "converter")
"""Connect lists transforms, then predicates, then converters, after the connectors."""

_CONVERTER_SETTINGS: Final[dict[str, Setting]] = {
    SCHEMAS_ENABLE: Setting(
        SCHEMAS_ENABLE,
        "BOOLEAN",
        "HIGH",
        'Whether each record is Connect\'s schema envelope ({"schema", "payload"}); '
        "only the json converter has one, so elsewhere only false is accepted.",
        default="false",
    ),
    "decimal.format": Setting(
        "decimal.format",
        "STRING",
        "LOW",
        "How the json converter writes a decimal: BASE64 (the base64 of its unscaled "
        "bytes, Connect's default) or NUMERIC (a JSON number); it reads either.",
        default="BASE64",
        choices=("BASE64", "NUMERIC"),
    ),
    AVRO_SCHEMA: Setting(
        AVRO_SCHEMA,
        "STRING",
        "HIGH",
        "The writer schema of the records, as Avro's JSON; no Schema Registry is asked.",
        required=True,
    ),
    AVRO_WIRE_FORMAT: Setting(
        AVRO_WIRE_FORMAT,
        "STRING",
        "MEDIUM",
        "confluent: a magic byte and the 4-byte schema id before each payload; plain: "
        "the payload alone.",
        default="confluent",
        choices=("confluent", "plain"),
    ),
    AVRO_SCHEMA_ID: Setting(
        AVRO_SCHEMA_ID,
        "INT",
        "MEDIUM",
        "The schema's registry id: written before each record, and the only one read "
        "when given (confluent wire format only).",
    ),
}
"""What each converter setting is; one this table does not know (a setting newer than
it) is listed as a STRING without a description rather than left out."""


@dataclass(frozen=True)
class RecordPlugin:
    class_name: str
    type: RecordPluginType
    version: str | None
    settings: tuple[Setting, ...]
    alias: str | None = None
    """The short name a config may give instead of the class name, if it has one."""


def _converters() -> Iterator[RecordPlugin]:
    for kind, class_name in CLASS_NAMES.items():
        settings = tuple(
            _converter_setting(name, json_converter=kind == "json")
            for name in sorted(SETTINGS[kind])
        )
        yield RecordPlugin(class_name, "converter", builtin_version(), settings, alias=kind)


def _converter_setting(name: str, *, json_converter: bool) -> Setting:
    known = _CONVERTER_SETTINGS.get(name, Setting(name, "STRING", "MEDIUM", ""))
    if name == SCHEMAS_ENABLE and json_converter:
        return replace(known, default="true")
    return known


def _transforms() -> Iterator[RecordPlugin]:
    for plugin in catalog.PLUGINS.values():
        yield RecordPlugin(plugin.class_name, plugin.type, plugin.version, plugin.settings)


def record_plugins() -> list[RecordPlugin]:
    """Every converter, transform and predicate, in Connect's listing order."""
    found = [*_converters(), *_transforms()]
    return sorted(found, key=lambda p: (LISTING_ORDER.index(p.type), p.class_name))


def find_record_plugin(name: str) -> RecordPlugin | None:
    """The converter, transform or predicate `name` (class name, simple name or alias)
    names; None when it is none of them."""
    kind = resolve_kind(name)
    if kind is not None:
        return next(p for p in _converters() if p.class_name == CLASS_NAMES[kind])
    plugin = catalog.find(name)
    if plugin is None:
        return None
    return next(p for p in _transforms() if p.class_name == plugin.class_name)
