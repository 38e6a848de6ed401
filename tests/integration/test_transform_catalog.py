"""The transforms and predicates sparkherd lists (`worker.records.transforms.catalog`) are
Connect's and Debezium's own: every class loads in their JVM, and its settings have the
names, types, defaults, importance and required-ness its `ConfigDef` gives them (the
documentation is sparkherd's own words)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from py4j.java_gateway import get_field

from tests.support.connect_oracle import ConnectOracle
from worker.records.transforms.catalog import PLUGINS, Plugin

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


@pytest.fixture(scope="module")
def oracle() -> Iterator[ConnectOracle]:
    with ConnectOracle.start(debezium=True) as started:
        yield started


def _connect_settings(oracle: ConnectOracle, plugin: Plugin) -> dict[str, tuple[Any, ...]]:
    config_def = oracle.transformation(plugin.class_name, _minimal(plugin)).config()
    convert = oracle.jvm.org.apache.kafka.common.config.ConfigDef.convertToString
    settings = {}
    for key in config_def.configKeys().values():
        kind = get_field(key, "type")
        default = get_field(key, "defaultValue") if key.hasDefault() else None
        settings[str(get_field(key, "name"))] = (
            str(kind.toString()),
            str(get_field(key, "importance").toString()),
            not key.hasDefault(),
            None if default is None else str(convert(default, kind)),
        )
    return settings


def _minimal(plugin: Plugin) -> dict[str, str]:
    """Enough settings for `configure` to accept (its ConfigDef is what is compared)."""
    given = {
        "spec": "int32",
        "fields": "a",
        "headers": "a",
        "operation": "copy",
        "field": "a",
        "topic.field": "t",
        "header": "h",
        "value.literal": "v",
        "regex": "a",
        "replacement": "b",
        "schema.name": "n",
        "target.type": "unix",
        "name": "h",
        "pattern": "a",
    }
    return {s.name: given[s.name] for s in plugin.settings if s.name in given}


@pytest.mark.parametrize("class_name", sorted(PLUGINS))
def test_each_listed_class_has_connects_settings(oracle: ConnectOracle, class_name: str) -> None:
    plugin = PLUGINS[class_name]
    ours = {
        s.name: (s.type, s.importance, s.required, None if s.required else s.default)
        for s in plugin.settings
    }
    assert ours == _connect_settings(oracle, plugin)
    kind = oracle.jvm.java.lang.Class.forName(
        "org.apache.kafka.connect.transforms.predicates.Predicate"
        if plugin.type == "predicate"
        else "org.apache.kafka.connect.transforms.Transformation"
    )
    assert kind.isAssignableFrom(oracle.jvm.java.lang.Class.forName(class_name))
