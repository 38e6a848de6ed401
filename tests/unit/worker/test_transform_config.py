"""A connector's `transforms`/`predicates` keys read into a chain: a bad chain is a
problem on the key at fault (the alias's setting), every class the catalog lists has a
builder, and nothing a config names is silently skipped."""

from __future__ import annotations

from typing import Final

import pytest

from worker.plugins.api import ConnectorConfigError
from worker.records.transforms.builders import PREDICATES, TRANSFORMS
from worker.records.transforms.catalog import PLUGINS
from worker.records.transforms.config import no_chain_problems, parse_chain
from worker.records.transforms.definitions import DEBEZIUM_VERSION, KAFKA_VERSION

T: Final = "org.apache.kafka.connect.transforms."


def problems(config: dict[str, str]) -> dict[str, str]:
    with pytest.raises(ConnectorConfigError) as caught:
        parse_chain(config)
    return {p.key: p.message for p in caught.value.problems}


def test_every_listed_class_is_built() -> None:
    families = {p.simple_name.split("$")[0] for p in PLUGINS.values()}
    assert families == set(TRANSFORMS) | set(PREDICATES)


def test_a_chain_as_connect_configures_it() -> None:
    chain = parse_chain(
        {
            "transforms": " mask , route ",
            "transforms.mask.type": f"{T}MaskField$Value",
            "transforms.mask.fields": "item, price",
            "transforms.route.type": "RegexRouter",
            "transforms.route.regex": "(.*)",
            "transforms.route.replacement": "copy-$1",
            "transforms.route.predicate": "tombstones",
            "transforms.route.negate": "TRUE",
            "predicates": "tombstones",
            "predicates.tombstones.type": f"{T}predicates.RecordIsTombstone",
        }
    )
    mask, route = chain.stages
    assert mask.transform.items("fields") == ("item", "price")
    assert mask.transform.flag("replace.null.with.default") is True
    assert route.predicate is not None and route.negate
    assert route.transform.plugin.class_name == f"{T}RegexRouter"


@pytest.mark.parametrize(
    ("config", "key", "says"),
    [
        ({"transforms": "a,a", "transforms.a.type": "Filter"}, "transforms", "Duplicate"),
        ({"transforms": "a"}, "transforms.a.type", "missing"),
        (
            {"transforms": "a", "transforms.a.type": "com.example.Mine"},
            "transforms.a.type",
            "not a",
        ),
        (
            {"transforms": "a", "transforms.a.type": f"{T}predicates.RecordIsTombstone"},
            "transforms.a.type",
            "is a predicate",
        ),
        (
            {"transforms": "m", "transforms.m.type": "MaskField$Value"},
            "transforms.m.fields",
            "missing",
        ),
        (
            {"transforms": "m", "transforms.m.type": "MaskField$Value", "transforms.m.field": "x"},
            "transforms.m.field",
            "not a setting of MaskField$Value",
        ),
        (
            {"transforms": "c", "transforms.c.type": "Cast$Value", "transforms.c.spec": "a:int33"},
            "transforms.c.spec",
            "int33",
        ),
        (
            {
                "transforms": "c",
                "transforms.c.type": "Cast$Value",
                "transforms.c.spec": "int8,a:int8",
            },
            "transforms.c.spec",
            "only cast",
        ),
        (
            {"transforms": "f", "transforms.f.type": "Filter", "transforms.f.predicate": "p"},
            "transforms.f.predicate",
            "not a predicate alias",
        ),
        (
            {"transforms": "f", "transforms.f.type": "Filter", "transforms.f.negate": "true"},
            "transforms.f.negate",
            "no transforms.f.predicate",
        ),
        (
            {"transforms": "i", "transforms.i.type": "InsertField$Value"},
            "transforms.i.topic.field",
            "no field insertion",
        ),
        (
            {
                "transforms": "t",
                "transforms.t.type": "TimestampConverter$Value",
                "transforms.t.target.type": "string",
            },
            "transforms.t.format",
            "required",
        ),
        (
            {
                "transforms": "t",
                "transforms.t.type": "TimestampRouter",
                "transforms.t.timestamp.format": "YYYY-ww",
            },
            "transforms.t.timestamp.format",
            "'YYYY'",
        ),
        (
            {
                "transforms": "h",
                "transforms.h.type": "HeaderFrom$Value",
                "transforms.h.fields": "a,b",
                "transforms.h.headers": "a",
                "transforms.h.operation": "copy",
            },
            "transforms.h.headers",
            "as many",
        ),
        (
            {"predicates": "p", "predicates.p.type": "HasHeaderKey", "predicates.p.name": ""},
            "predicates.p.name",
            "empty",
        ),
        (
            {
                "transforms": "u",
                "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
                "transforms.u.drop.tombstones": "false",
                "transforms.u.delete.handling.mode": "soft",
            },
            "transforms.u.drop.tombstones",
            "no equal in Debezium 3",
        ),
        (
            {
                "transforms": "u",
                "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
                "transforms.u.drop.fields.header.name": "drop",
            },
            "transforms.u.drop.fields.header.name",
            "not supported",
        ),
    ],
)
def test_a_bad_chain_names_the_key(config: dict[str, str], key: str, says: str) -> None:
    found = problems(config)
    assert key in found, found
    assert says in found[key]


@pytest.mark.parametrize(
    ("kind", "alias", "class_name", "installed"),
    [
        ("transforms", "mask", f"{T}MaskField$Value", KAFKA_VERSION),
        ("predicates", "dead", f"{T}predicates.RecordIsTombstone", KAFKA_VERSION),
        ("transforms", "u", "io.debezium.transforms.ExtractNewRecordState", DEBEZIUM_VERSION),
    ],
)
def test_a_plugin_version_admits_the_installed_class_only(
    kind: str, alias: str, class_name: str, installed: str
) -> None:
    """KIP-891's `<kind>.<alias>.plugin.version`, as Connect 4.1 takes it: a range that
    admits the one version this worker has is accepted, another is a 400 on that key."""
    base = {kind: alias, f"{kind}.{alias}.type": class_name}
    if kind == "transforms":
        base["transforms.mask.fields"] = "item"
    else:
        base |= {"transforms": "f", "transforms.f.type": "Filter", "transforms.f.predicate": alias}
    key = f"{kind}.{alias}.plugin.version"
    for admitted in (installed, "latest", f"[{installed},)"):
        parse_chain(base | {key: admitted})
    found = problems(base | {key: "[0.1,0.2)"})
    assert list(found) == [key]
    assert installed in found[key] and class_name in found[key]
    assert "invalid version requirement" in problems(base | {key: "[1.0"})[key]


def test_a_connector_without_records_refuses_a_chain() -> None:
    [problem] = no_chain_problems({"transforms": "a", "transforms.a.type": "Filter"}, "generator")
    assert problem.key == "transforms"
    assert no_chain_problems({"transforms": " "}, "generator") == []
