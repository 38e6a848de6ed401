"""The same REST calls to Apache Kafka Connect and to sparkherd, answer by answer (issue 17).

A real Kafka Connect distributed worker (connect-runtime of the broker's version, fetched
with Maven and cached) and a sparkherd worker, each alone in a group of its own on the
session's Apache Kafka, get one scripted sequence (`tests/support/rest_script.py`):
create, duplicates, invalid configs and unknown plugins, config get/put/patch, status and
tasks, pause/resume/stop, every restart variant, offsets in and out of STOPPED, loggers
at worker and cluster scope, plugins (the whole listing, a connector's, a converter's, a
transform's and a predicate's settings, `?version=`), KIP-891's versions in states and
`connector.plugin.version` right and wrong, KIP-995's `initial_offsets` right and wrong,
`/health`, unknown connectors and tasks, wrong methods and malformed bodies. Status
code, top-level body keys and `error_code` must agree, except for the documented
differences: the mismatches are exactly `rest_script.DOCUMENTED`, so a new difference
fails here, and so does one that went away (its line must go from the list).

What a few answers hold is compared too (issue 43): the transforms, predicates and
converters the full listing names, with their types and versions, and the settings a
transform and a converter declare.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.rest_script import (
    CONVERTER,
    DOCUMENTED,
    TRANSFORM,
    Answer,
    Differential,
    run_differential,
)

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

RECORD_PLUGINS: Final = ("transformation", "predicate", "converter")
ONLY_HERE: Final = {
    ("io.confluent.connect.avro.AvroConverter", "converter"),
    ("io.debezium.transforms.ExtractNewRecordState", "transformation"),
}
"""Plugins sparkherd lists that the Connect worker of this test does not have: Confluent's
Avro converter and Debezium's transform (each a plugin of its own to a Connect worker)."""


@pytest.fixture(scope="module")
def differential(
    kafka_broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Differential:
    return run_differential(kafka_broker.bootstrap_servers, tmp_path_factory.mktemp("rest"))


def test_sparkherd_answers_the_rest_api_as_kafka_connect_does(
    differential: Differential,
) -> None:
    found = set(differential.mismatches)
    assert found == DOCUMENTED, (
        f"new differences: {sorted(found - DOCUMENTED)}\n"
        f"differences gone (drop them from rest_script's lists): {sorted(DOCUMENTED - found)}\n"
        f"{differential.report()}"
    )


def _both(differential: Differential, label: str) -> Iterator[Answer]:
    for answers in (differential.connect, differential.sparkherd):
        yield next(a for a in answers if a.label == label)


def _record_plugins(answer: Answer) -> dict[tuple[str, str], Any]:
    return {
        (p["class"], p["type"]): p.get("version")
        for p in answer.body
        if p["type"] in RECORD_PLUGINS
    }


def test_the_full_listing_names_connect_s_transforms_predicates_and_converters(
    differential: Differential,
) -> None:
    connect, sparkherd = _both(differential, "GET /connector-plugins?connectorsOnly=false")
    theirs, ours = _record_plugins(connect), _record_plugins(sparkherd)

    transforms = {plugin for plugin in theirs if plugin[1] != "converter"}
    assert {plugin: ours.get(plugin) for plugin in transforms} == {
        plugin: theirs[plugin] for plugin in transforms
    }, "a transform or predicate Connect lists is missing, or has another type or version"
    assert set(ours) - set(theirs) == ONLY_HERE
    assert {"header_converter"} == {p["type"] for p in connect.body} - {
        p["type"] for p in sparkherd.body
    }, "sparkherd has no header converter to list"


def _settings(answer: Answer) -> dict[str, tuple[Any, ...]]:
    return {
        d["name"]: (d["type"], d["required"], d["default_value"], d["importance"])
        for d in answer.body
    }


def test_a_transform_declares_the_settings_connect_s_declares(
    differential: Differential,
) -> None:
    connect, sparkherd = _both(differential, "GET /connector-plugins/{transform}/config")

    assert TRANSFORM.endswith("MaskField$Value")
    assert _settings(sparkherd) == _settings(connect)


def test_a_converter_setting_is_declared_as_connect_declares_it(
    differential: Differential,
) -> None:
    connect, sparkherd = _both(differential, "GET /connector-plugins/{converter}/config")
    theirs, ours = _settings(connect), _settings(sparkherd)

    assert CONVERTER.endswith("JsonConverter")
    assert ours, "the json converter has settings"
    assert {name: theirs.get(name) for name in ours} == ours
