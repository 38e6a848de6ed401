"""Which plugins' writes a worker warms up before it joins (`worker.warmup.connectors`)."""

from __future__ import annotations

import pytest

from sparkherd.service import _warm_up_plugins
from worker.config import ConfigError, WorkerConfig
from worker.connectors import default_registry

BASE = {"bootstrap.servers": "127.0.0.1:9092", "group.id": "warm"}


def chosen(settings: dict[str, str]) -> list[str]:
    config = WorkerConfig.from_mapping({**BASE, **settings})
    return [plugin.name for plugin in _warm_up_plugins(config, default_registry())]


@pytest.mark.parametrize(
    ("settings", "names"),
    [
        ({}, ["kafka-to-delta", "kafka-to-iceberg"]),
        ({"worker.warmup.connectors": ""}, []),
        (
            {"worker.warmup.connectors": " KafkaToIcebergConnector , generator"},
            ["kafka-to-iceberg"],
        ),
    ],
)
def test_every_plugin_with_a_warm_up_unless_the_key_names_fewer(
    settings: dict[str, str], names: list[str]
) -> None:
    assert chosen(settings) == names


def test_a_name_no_plugin_has_stops_the_worker_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"worker\.warmup\.connectors: Unknown connector plugin"):
        chosen({"worker.warmup.connectors": "kafka-to-delta,nope"})
