"""`/connector-plugins/...`: Kafka Connect's plugin listing, config schema and validation.

Tools written for Kafka Connect (UIs, CLIs, deployment pipelines) discover which
connectors a cluster offers and check a config before submitting it; they read Connect's
entities (`PluginInfo`, `ConfigKeyInfo`, `ConfigInfos`), so those shapes are kept field
for field; the listing adds each plugin's `alias`, the name configs use, which Connect's
class names alone do not show. A connector's schema is its pydantic `config_model`, read
through the field aliases (the config keys), behind the framework's own settings and the
chain's (`transforms`, `predicates`); a converter's, transform's or predicate's is its
settings as `worker.admission.record_plugins` lists them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from types import NoneType, UnionType
from typing import Annotated, Any, Final, Union, get_args, get_origin

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field, SecretStr
from pydantic.fields import FieldInfo

from rest.errors import error_response
from rest.models import ConnectorConfig, ErrorBody, config_string, string_config
from rest.worker_seam import (
    CONNECTOR_CLASS,
    CONNECTOR_VERSION,
    HIDDEN,
    LATEST,
    ConfigProblem,
    Connector,
    FrameworkSettings,
    PluginRegistry,
    RegistryPlugins,
    Setting,
    UnknownPluginError,
    chain_definitions,
    find_record_plugin,
    plugin_version,
    qualified_name,
    record_plugins,
    version_problem,
)

_SCALAR_TYPES: Final = ((bool, "BOOLEAN"), (int, "INT"), (float, "DOUBLE"), (SecretStr, "PASSWORD"))
_LIST_TYPES: Final = (list, tuple, set, frozenset)


class PluginInfo(BaseModel):
    plugin_class: str = Field(alias="class")
    type: str = Field(description="source, sink, transformation, predicate or converter")
    version: str | None = Field(
        default=None, description="absent when no installed distribution ships the plugin"
    )
    alias: str | None = Field(
        default=None,
        description="extension: the short name a config usually gives (connector.class, "
        "key.converter); absent for a plugin named by its class alone",
    )


class ConfigKeyInfo(BaseModel):
    name: str
    type: str = Field(description="STRING, INT, LONG, DOUBLE, BOOLEAN, LIST, PASSWORD or CLASS")
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None = None
    width: str = "NONE"
    display_name: str
    dependents: list[str] = Field(default_factory=list)
    order_in_group: int = Field(default=-1, serialization_alias="order")


class ConfigValueInfo(BaseModel):
    name: str
    value: str | None
    recommended_values: list[str] = Field(default_factory=list)
    errors: list[str]
    visible: bool = True


class ConfigInfo(BaseModel):
    definition: ConfigKeyInfo
    value: ConfigValueInfo


class ConfigInfos(BaseModel):
    name: str
    error_count: int
    groups: list[str] = Field(default_factory=list)
    configs: list[ConfigInfo]


def connector_plugins_router(plugins: RegistryPlugins) -> APIRouter:
    router = APIRouter(prefix="/connector-plugins")
    registry = plugins.registry

    @router.get("", response_model=list[PluginInfo], response_model_exclude_none=True)
    async def list_plugins(
        connectors_only: Annotated[bool, Query(alias="connectorsOnly")] = True,
    ) -> list[PluginInfo]:
        """The connectors; with `connectorsOnly=false` then the transforms, predicates
        and converters, as Connect lists them."""
        connectors = [
            _plugin_info(qualified_name(c), c.connector_type, plugin_version(c), c.name)
            for c in registry.list_plugins()
        ]
        listed = sorted(connectors, key=lambda plugin: plugin.plugin_class)
        if not connectors_only:
            listed += [
                _plugin_info(p.class_name, p.type, p.version, p.alias) for p in record_plugins()
            ]
        return listed

    @router.get(
        "/{plugin}/config",
        response_model=list[ConfigKeyInfo],
        responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody}},
    )
    async def plugin_config(
        plugin: str,
        version: Annotated[
            str, Query(description="KIP-891: a version or range the plugin must have")
        ] = LATEST,
    ) -> list[ConfigKeyInfo] | Response:
        """A connector's, converter's, transform's or predicate's settings; 400 when
        `version` is no version range or does not admit the plugin's version."""
        try:
            connector = registry.resolve(plugin)
        except UnknownPluginError as exc:
            found = find_record_plugin(plugin)
            if found is None:
                return error_response(404, str(exc))
            if (
                refused := version_problem(version, f"Plugin {found.class_name}", found.version)
            ) is not None:
                return error_response(400, refused)
            return [_setting_definition(setting.name, setting) for setting in found.settings]
        installed = plugin_version(connector)
        if (
            refused := version_problem(version, f"Plugin {qualified_name(connector)}", installed)
        ) is not None:
            return error_response(400, refused)
        return list(config_definitions(connector).values())

    @router.put(
        "/{plugin}/config/validate",
        response_model=ConfigInfos,
        responses={400: {"model": ErrorBody}, 404: {"model": ErrorBody}},
    )
    async def validate_config(plugin: str, config: ConnectorConfig) -> ConfigInfos | Response:
        """An invalid value is reported inside the 200 answer, not as an HTTP error.
        Off the event loop: a plugin's checks may ask Spark."""
        try:
            connector = registry.resolve(plugin)
        except UnknownPluginError as exc:
            return error_response(404, str(exc))
        settings = {CONNECTOR_CLASS: plugin, **string_config(config)}
        if not settings[CONNECTOR_CLASS].strip():
            return error_response(
                400, f"{CONNECTOR_CLASS} is empty: leave it out, or name the plugin ({plugin})"
            )
        if not _resolves_to(registry, settings[CONNECTOR_CLASS], connector):
            return error_response(
                400,
                f"Included connector type {settings[CONNECTOR_CLASS]} does not match "
                f"request type {plugin}",
            )
        return await asyncio.to_thread(config_infos, connector, settings, plugins.problems)

    return router


def _plugin_info(class_name: str, kind: str, version: str | None, alias: str | None) -> PluginInfo:
    return PluginInfo.model_validate(
        {"class": class_name, "type": kind, "version": version, "alias": alias}
    )


def _resolves_to(registry: PluginRegistry, class_name: str, connector: type[Connector]) -> bool:
    """Whether `class_name` (alias, class name or path) resolves to `connector`."""
    try:
        return registry.resolve(class_name) is connector
    except UnknownPluginError:
        return False


def config_definitions(
    connector: type[Connector], config: Mapping[str, str] | None = None
) -> dict[str, ConfigKeyInfo]:
    """Every setting by key: the framework's first, then the chain's (`transforms`,
    `predicates` and, for `config`'s aliases, the keys each alias defines, as Connect
    enriches a connector's definition), then the plugin's in declaration order.

    A plugin that declares a framework key as well does not get it listed twice.
    `connector.plugin.version` defaults to the plugin's version, as in Connect.
    """
    definitions: dict[str, ConfigKeyInfo] = {}
    for name, field in FrameworkSettings.model_fields.items():
        key = field.alias or name
        definitions[key] = _definition(key, field)
    definitions[CONNECTOR_VERSION].default_value = plugin_version(connector)
    for key, setting in chain_definitions(config or {}):
        definitions.setdefault(key, _setting_definition(key, setting))
    for name, field in connector.config_model.model_fields.items():
        key = field.alias or name
        definitions.setdefault(key, _definition(key, field))
    return definitions


def _setting_definition(key: str, setting: Setting) -> ConfigKeyInfo:
    """A converter's, transform's or predicate's setting, under `key`."""
    return ConfigKeyInfo(
        name=key,
        type=setting.type,
        required=setting.required,
        default_value=setting.default,
        importance=setting.importance,
        documentation=setting.documentation,
        display_name=key,
    )


def _definition(key: str, field: FieldInfo) -> ConfigKeyInfo:
    required = field.is_required()
    return ConfigKeyInfo(
        name=key,
        type=connect_type(field.annotation),
        required=required,
        default_value=None if required else _default_text(field),
        importance="HIGH" if required else "MEDIUM",
        documentation=field.description or "",
        display_name=key,
    )


def connect_type(annotation: Any) -> str:
    """Connect's type name for a pydantic annotation; STRING when nothing closer fits
    (Literal, Path, enums), since every value arrives as a string anyway."""
    origin = get_origin(annotation)
    if origin in (Union, UnionType):
        present = [arg for arg in get_args(annotation) if arg is not NoneType]
        return connect_type(present[0]) if len(present) == 1 else "STRING"
    if origin is Annotated:
        return connect_type(get_args(annotation)[0])
    if origin is type:
        return "CLASS"
    kind = origin or annotation
    if not isinstance(kind, type):
        return "STRING"
    if issubclass(kind, _LIST_TYPES):
        return "LIST"
    return next((name for base, name in _SCALAR_TYPES if issubclass(kind, base)), "STRING")


def _default_text(field: FieldInfo) -> str | None:
    default = field.get_default(call_default_factory=True)
    return None if default is None else _as_text(default)


def _as_text(value: object) -> str:
    """A value written the way a user would type it in the string config."""
    if isinstance(value, _LIST_TYPES):
        return ",".join(_as_text(item) for item in value)
    if isinstance(value, str | int | float):
        return config_string(value)
    return str(value)


Problems = Callable[[type[Connector], Mapping[str, str]], list[ConfigProblem]]


def config_infos(
    connector: type[Connector], settings: Mapping[str, str], problems: Problems
) -> ConfigInfos:
    """Connect's ConfigInfos for `settings`: one entry per defined key, with its errors.

    A problem under no defined key (one about the config as a whole) must still count, or
    a config that creating the connector refuses would validate clean; it is filed under
    `connector.class`, the plugin that refused the config.
    """
    definitions = config_definitions(connector, settings)
    errors: dict[str, list[str]] = {key: [] for key in definitions}
    for problem in problems(connector, settings):
        if problem.key in errors:
            errors[problem.key].append(problem.message)
        else:
            errors[CONNECTOR_CLASS].append(str(problem))
    return ConfigInfos(
        name=qualified_name(connector),
        error_count=sum(len(messages) for messages in errors.values()),
        configs=[
            ConfigInfo(definition=definition, value=_value(definition, settings, errors[key]))
            for key, definition in definitions.items()
        ],
    )


def _value(
    definition: ConfigKeyInfo, settings: Mapping[str, str], errors: list[str]
) -> ConfigValueInfo:
    """The value as given, else the default, as Connect shows it; passwords stay hidden."""
    value = settings.get(definition.name, definition.default_value)
    if definition.type == "PASSWORD" and value is not None:
        value = HIDDEN
    return ConfigValueInfo(name=definition.name, value=value, errors=errors)
