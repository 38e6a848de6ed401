"""Which converter a connector's keys and values go through, decided from its config.

Connect's rules: `key.converter` / `value.converter` name a converter class, and the
settings under `key.converter.` / `value.converter.` configure it. A connector that names
no converter for a side takes the worker's (`inherit_converters`): the worker's class
*and* the worker's settings for it, with the connector's own settings for that side on
top. A connector that names one takes none of the worker's settings for that side: they
were written for another converter. What neither names is the connector's built-in
default, through the same rule.

Unlike Connect, an unknown setting under a converter's prefix is refused (400 naming the
key), so a typo such as `value.converter.schema.enable` is not silently ignored.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal, cast, get_args

from pydantic import BaseModel, Field

from worker.plugins.api import ConfigProblem, ConnectorConfigError, Settings, parse_config
from worker.records.converters.avro_schema import avro_json_problem
from worker.records.nesting import ddl_nesting_problem

Side = Literal["key", "value"]
SIDES: Final[tuple[Side, ...]] = get_args(Side)
FixedKind = Literal["short", "integer", "long", "float", "double", "boolean"]
"""Connect's converters of one number or boolean (`fixed_width`)."""
Kind = Literal["bytes", "string", "json", "avro", FixedKind]
DecimalFormat = Literal["BASE64", "NUMERIC"]
Direction = Literal["read", "write"]
"""`read`: a connector decodes records it reads from Kafka; `write`: it encodes them."""
WireFormat = Literal["confluent", "plain"]

CLASS_NAMES: Final[Mapping[Kind, str]] = {
    "bytes": "org.apache.kafka.connect.converters.ByteArrayConverter",
    "string": "org.apache.kafka.connect.storage.StringConverter",
    "json": "org.apache.kafka.connect.json.JsonConverter",
    "avro": "io.confluent.connect.avro.AvroConverter",
    **{
        kind: f"org.apache.kafka.connect.converters.{kind.capitalize()}Converter"
        for kind in get_args(FixedKind)
    },
}
"""Connect's class names (Confluent's for Avro, the one Connect users know); each kind's
alias is its key here, and a simple class name (`JsonConverter`) works too."""

SCHEMAS_ENABLE: Final = "schemas.enable"
DECIMAL_FORMAT: Final = "decimal.format"
AVRO_SCHEMA: Final = "avro.schema"
AVRO_WIRE_FORMAT: Final = "avro.wire.format"
AVRO_SCHEMA_ID: Final = "avro.schema.id"
SETTINGS: Final[Mapping[Kind, frozenset[str]]] = {
    **{kind: frozenset({SCHEMAS_ENABLE}) for kind in CLASS_NAMES},
    "json": frozenset({SCHEMAS_ENABLE, DECIMAL_FORMAT}),
    "avro": frozenset({AVRO_SCHEMA, AVRO_WIRE_FORMAT, AVRO_SCHEMA_ID}),
}
"""The settings each converter takes under its prefix. `schemas.enable=false` is
accepted on every converter but Avro's (Connect worker files often carry it for every
converter, and it says nothing false there); `true` is refused but on json, since no
envelope would be read or written."""
REGISTRY_PREFIX: Final = "schema.registry."
JAVA_INT_MAX: Final = 2**31 - 1


_CLASS_DOC: Final = (
    "Connect's converter class or its alias: bytes, string, json, avro, short, integer, "
    "long, float, double or boolean; default: the worker's {key}, else this connector's own"
)


class ConverterSettings(BaseModel):
    """The converter classes as settings of a connector's model, so that its config
    definitions and validate answers list them as Connect's do; `record_converters`
    parses and checks them with their prefixed settings."""

    key_converter: str | None = Field(
        None, alias="key.converter", description=_CLASS_DOC.format(key="key.converter")
    )
    value_converter: str | None = Field(
        None, alias="value.converter", description=_CLASS_DOC.format(key="value.converter")
    )


class DecodingSettings(ConverterSettings):
    """A connector that reads Kafka may also give a json payload's type."""

    key_schema: str | None = Field(
        None,
        alias="key.schema",
        description="json keys: their type as DDL (e.g. BIGINT); default: from the data",
    )
    value_schema: str | None = Field(
        None,
        alias="value.schema",
        description="json values: their type as DDL (e.g. `id LONG, name STRING`); default: "
        "from the data",
    )


def converter_key(side: Side) -> str:
    return f"{side}.converter"


def schema_key(side: Side) -> str:
    """`key.schema` / `value.schema`: a DDL for the JSON a connector reads (not a
    converter setting: it describes one connector's data, so no worker sets it)."""
    return f"{side}.schema"


def is_converter_key(key: str) -> bool:
    """A key of Connect's converter settings, for the worker's config as for a connector's."""
    return any(key == converter_key(s) or key.startswith(f"{converter_key(s)}.") for s in SIDES)


@dataclass(frozen=True)
class ConverterSpec:
    """One side's converter, its settings parsed and checked."""

    side: Side
    kind: Kind
    schemas_enable: bool = False
    """json: records are Connect's `{"schema": ..., "payload": ...}` envelope."""
    schema_ddl: str | None = None
    """json, reading: the payload's Spark type as DDL; None: taken from the data."""
    decimal_format: DecimalFormat = "BASE64"
    """json, writing: a decimal as the base64 of its unscaled bytes (Connect's default) or
    as a JSON number. Reading takes either, as Connect's does."""
    avro_schema: str | None = None
    wire_format: WireFormat = "confluent"
    """avro: `confluent` records start with magic byte 0 and a 4-byte schema id."""
    schema_id: int | None = None
    """avro, confluent: the id written, and the only one read when given."""

    @property
    def key(self) -> str:
        return converter_key(self.side)

    def setting(self, name: str) -> str:
        return f"{self.key}.{name}"

    @property
    def confluent_prefix(self) -> bytes | None:
        """The 5 bytes before each Avro payload this converter writes, if any."""
        if self.kind != "avro" or self.wire_format != "confluent" or self.schema_id is None:
            return None
        return b"\x00" + self.schema_id.to_bytes(4, "big")


@dataclass(frozen=True)
class RecordConverters:
    key: ConverterSpec
    value: ConverterSpec

    def __iter__(self) -> Iterator[ConverterSpec]:
        return iter((self.key, self.value))


def inherit_converters(defaults: Mapping[str, str], config: Mapping[str, str]) -> dict[str, str]:
    """The converter settings `config` takes from `defaults` (a worker's, or a
    connector's built-in ones): for each side `config` names no converter for, every
    default setting of that side that `config` does not set itself."""
    inherited: dict[str, str] = {}
    for side in SIDES:
        prefix = converter_key(side)
        if prefix in config:
            continue
        for key, value in defaults.items():
            if (key == prefix or key.startswith(f"{prefix}.")) and key not in config:
                inherited[key] = value
    return inherited


def resolve_kind(name: str) -> Kind | None:
    """An alias, a Connect class name or its simple name; None when unknown."""
    wanted = name.strip()
    for kind, class_name in CLASS_NAMES.items():
        if wanted.lower() == kind or wanted in (class_name, class_name.rsplit(".", 1)[1]):
            return kind
    return None


def _known_names() -> str:
    return ", ".join(f"{class_name} ({kind})" for kind, class_name in CLASS_NAMES.items())


class _Problems:
    def __init__(self) -> None:
        self.found: list[ConfigProblem] = []

    def add(self, key: str, message: str) -> None:
        self.found.append(ConfigProblem(key, message))


def converter_spec(
    config: Mapping[str, str],
    side: Side,
    direction: Direction | None,
    default: Kind = "bytes",
) -> ConverterSpec:
    """One side's converter from `config` (defaults already inherited). `direction`
    None checks what holds for any connector (a worker's defaults)."""
    problems = _Problems()
    spec = _parse(config, side, direction, default, problems)
    if problems.found:
        raise ConnectorConfigError(problems.found)
    return spec


def record_converters(
    config: Mapping[str, str], defaults: Mapping[str, str], direction: Direction
) -> RecordConverters:
    """Both sides' converters of a connector whose built-in defaults are `defaults`
    (e.g. `{"value.converter": "json", "value.converter.schemas.enable": "false"}`)."""
    full = {**inherit_converters(defaults, config), **config}
    problems = _Problems()
    key = _parse(full, "key", direction, "bytes", problems)
    value = _parse(full, "value", direction, "bytes", problems)
    if problems.found:
        raise ConnectorConfigError(problems.found)
    return RecordConverters(key, value)


def parse_with_converters(
    model: type[Settings],
    config: Mapping[str, str],
    defaults: Mapping[str, str],
    direction: Direction,
) -> tuple[Settings, RecordConverters]:
    """A connector's settings and its converters, every problem of both in one error."""
    problems: list[ConfigProblem] = []
    settings = converters = None
    try:
        settings = parse_config(model, config)
    except ConnectorConfigError as exc:
        problems += exc.problems
    try:
        converters = record_converters(config, defaults, direction)
    except ConnectorConfigError as exc:
        problems += exc.problems
    if settings is None or converters is None:
        raise ConnectorConfigError(problems)
    return settings, converters


def worker_converter_problems(settings: Mapping[str, str]) -> list[ConfigProblem]:
    """What is wrong with a worker's `key.converter*` / `value.converter*` settings."""
    problems = _Problems()
    for side in SIDES:
        if any(key.startswith(converter_key(side)) for key in settings):
            _parse(settings, side, None, "bytes", problems)
    return problems.found


def _parse(
    config: Mapping[str, str],
    side: Side,
    direction: Direction | None,
    default: Kind,
    problems: _Problems,
) -> ConverterSpec:
    key = converter_key(side)
    named = config.get(key)
    kind = default if named is None else resolve_kind(named)
    if kind is None:
        problems.add(key, f"unknown converter {named!r}; known: {_known_names()}")
        return ConverterSpec(side, default)
    settings = {
        name[len(key) + 1 :]: value.strip()
        for name, value in config.items()
        if name.startswith(f"{key}.")
    }
    for name in sorted(settings):
        if name not in SETTINGS[kind]:
            problems.add(f"{key}.{name}", _unknown_setting(kind, name))
    schemas_enable = _schemas_enable(kind, settings.get(SCHEMAS_ENABLE))
    if isinstance(schemas_enable, str):
        problems.add(f"{key}.{SCHEMAS_ENABLE}", schemas_enable)
        schemas_enable = False
    ddl = _schema_ddl(config, side, kind, direction, problems)
    if kind == "avro":
        return _avro(side, settings, direction, problems)
    decimals = _decimal_format(settings.get(DECIMAL_FORMAT), f"{key}.{DECIMAL_FORMAT}", problems)
    return ConverterSpec(side, kind, schemas_enable, ddl, decimal_format=decimals)


def _unknown_setting(kind: Kind, name: str) -> str:
    if name.startswith(REGISTRY_PREFIX):
        return (
            "no Schema Registry is used: give the writer schema in "
            f"{AVRO_SCHEMA} (and its registry id in {AVRO_SCHEMA_ID} to write Confluent's "
            "wire format)"
        )
    known = ", ".join(sorted(SETTINGS[kind]))
    return f"not a setting of the {kind} converter ({CLASS_NAMES[kind]}); its settings: {known}"


def _schemas_enable(kind: Kind, text: str | None) -> bool | str:
    """The parsed value, or a problem as a string. JSON's default is Connect's: true."""
    if text is None:
        return kind == "json"
    if text.lower() not in ("true", "false"):
        return f"invalid value {text!r}: 'true' or 'false'"
    enabled = text.lower() == "true"
    if enabled and kind != "json":
        return (
            f"only the json converter has a schema envelope; the {kind} converter reads "
            "and writes no schema (remove the setting or set it to false)"
        )
    return enabled


def _decimal_format(text: str | None, key: str, problems: _Problems) -> DecimalFormat:
    """Connect's values, in any case, as Connect takes them."""
    for known in get_args(DecimalFormat):
        if text is None or text.upper() == known:
            return cast(DecimalFormat, known)
    problems.add(
        key,
        f"invalid value {text!r}: BASE64 (a decimal as the base64 of its unscaled bytes, "
        "Connect's default) or NUMERIC (a JSON number)",
    )
    return "BASE64"


def _schema_ddl(
    config: Mapping[str, str],
    side: Side,
    kind: Kind,
    direction: Direction | None,
    problems: _Problems,
) -> str | None:
    key = schema_key(side)
    text = config.get(key)
    if text is None:
        return None
    if not text.strip():
        problems.add(key, "empty: give a DDL such as `id LONG, name STRING`, or leave it out")
    elif kind != "json":
        problems.add(
            key,
            f"only the json converter reads a DDL schema; {converter_key(side)} is {kind}",
        )
    elif direction == "write":
        problems.add(key, "a connector that writes Kafka encodes its rows' own schema")
    elif (too_deep := ddl_nesting_problem(text)) is not None:
        problems.add(key, too_deep)
    return text.strip() or None


def _avro(
    side: Side, settings: Mapping[str, str], direction: Direction | None, problems: _Problems
) -> ConverterSpec:
    key = converter_key(side)
    schema = settings.get(AVRO_SCHEMA)
    if schema is None:
        problems.add(f"{key}.{AVRO_SCHEMA}", "missing: the Avro converter needs the writer schema")
    elif (problem := avro_json_problem(schema)) is not None:
        problems.add(f"{key}.{AVRO_SCHEMA}", problem)
    wire = settings.get(AVRO_WIRE_FORMAT, "confluent").lower()
    if wire not in get_args(WireFormat):
        problems.add(
            f"{key}.{AVRO_WIRE_FORMAT}",
            f"invalid value {wire!r}: 'confluent' (magic byte 0 and a 4-byte schema id "
            "before each payload) or 'plain' (the payload alone)",
        )
        wire = "confluent"
    schema_id = _schema_id(settings.get(AVRO_SCHEMA_ID), f"{key}.{AVRO_SCHEMA_ID}", problems)
    if wire == "plain" and schema_id is not None:
        problems.add(f"{key}.{AVRO_SCHEMA_ID}", "only the confluent wire format carries an id")
    if direction == "write" and wire == "confluent" and schema_id is None:
        problems.add(
            f"{key}.{AVRO_SCHEMA_ID}",
            "missing: Confluent's wire format names the schema's registry id in every "
            f"record (or set {key}.{AVRO_WIRE_FORMAT}=plain)",
        )
    return ConverterSpec(
        side,
        "avro",
        avro_schema=schema,
        wire_format=wire,  # type: ignore[arg-type]
        schema_id=schema_id,
    )


def _schema_id(text: str | None, key: str, problems: _Problems) -> int | None:
    if text is None:
        return None
    if not text.isdecimal() or int(text) > JAVA_INT_MAX:
        problems.add(key, f"invalid value {text!r}: a schema id from 0 to {JAVA_INT_MAX}")
        return None
    return int(text)
