"""Every schema a REST caller or a record can hand the worker is measured against one
depth bound before anything walks it: the deepest allowed passes, one level more is
refused naming the key and the bound. Without Spark."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import ArrayType, DataType, IntegerType

from worker.plugins.api import ConnectorConfigError
from worker.records.converters.connect_schema import UnmappableTypeError, spark_type
from worker.records.converters.spec import record_converters
from worker.records.nesting import (
    MAX_NESTING,
    ddl_nesting_problem,
    json_nesting_problem,
    value_nesting_problem,
)

BOUND = f"more than {MAX_NESTING} levels deep"


def avro_arrays(levels: int) -> str:
    """An Avro schema whose JSON nests `levels` deep: arrays of arrays of int."""
    return '{"type": "array", "items": ' * levels + '"int"' + "}" * levels


def envelope_arrays(levels: int) -> dict[str, object]:
    """A Connect envelope schema nested `levels` deep."""
    schema: dict[str, object] = {"type": "int32"}
    for _ in range(levels - 1):
        schema = {"type": "array", "items": schema}
    return schema


def ddl_arrays(levels: int, filler: str = "") -> str:
    """A DDL whose `<...>` nest `levels` deep, `filler` after each opening."""
    return "a " + f"STRUCT<{filler} b: " * levels + "INT" + ">" * levels


def problems(config: dict[str, str]) -> dict[str, str]:
    try:
        record_converters(config, {}, "read")
    except ConnectorConfigError as exc:
        return {problem.key: problem.message for problem in exc.problems}
    return {}


def test_the_bound_is_one_constant_named_in_every_message() -> None:
    too_deep = "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)
    for problem in (
        json_nesting_problem(too_deep),
        value_nesting_problem(json.loads(too_deep)),
        ddl_nesting_problem(ddl_arrays(MAX_NESTING + 1)),
    ):
        assert problem is not None and BOUND in problem


def test_json_text_at_the_bound_passes_and_one_level_more_does_not() -> None:
    deepest = "[" * MAX_NESTING + "]" * MAX_NESTING
    assert json_nesting_problem(deepest) is None
    assert json_nesting_problem("[" + deepest + "]") is not None
    objects = '{"a": ' * MAX_NESTING + "1" + "}" * MAX_NESTING
    assert json_nesting_problem(objects) is None
    assert json_nesting_problem(f'{{"x": {objects}}}') is not None


def test_json_text_measures_brackets_not_strings() -> None:
    assert json_nesting_problem(json.dumps({"a": "[{" * 500, "b": ['"]]]\\'] * 3})) is None
    escaped = json.dumps(['\\"]]]]' * 200])
    assert json_nesting_problem(escaped) is None
    assert json_nesting_problem('"[[[' + "[" * 500) is None  # an unclosed string runs to the end
    assert json_nesting_problem("[" * 1_000_000) is not None
    assert json_nesting_problem(json.dumps([[], [[]], {"a": []}] * 1000)) is None


def test_json_bytes_are_read_as_the_json_parser_reads_them() -> None:
    deep = "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)
    for encoding in ("utf-8", "utf-16", "utf-32-be"):
        assert json_nesting_problem(deep.encode(encoding)) is not None
        assert json_nesting_problem(json.dumps({"a": deep}).encode(encoding)) is None
    assert json_nesting_problem(b"\xff\xfe\x00\xd8") is None  # no text: the parser refuses it


def test_a_parsed_value_is_measured_as_its_text_is() -> None:
    for levels in (MAX_NESTING, MAX_NESTING + 1):
        text = '{"a": [' * (levels // 2) + "{}" * (levels % 2) + "]}" * (levels // 2)
        assert (json_nesting_problem(text) is None) == (levels <= MAX_NESTING)
        assert (value_nesting_problem(json.loads(text)) is None) == (levels <= MAX_NESTING)
    assert value_nesting_problem("[[[[") is None


def test_a_ddl_at_the_bound_passes_and_one_level_more_does_not() -> None:
    assert ddl_nesting_problem(ddl_arrays(MAX_NESTING)) is None
    assert ddl_nesting_problem(ddl_arrays(MAX_NESTING + 1)) is not None
    many = ", ".join(f"c{n} ARRAY<MAP<STRING, INT>>" for n in range(5000))
    assert ddl_nesting_problem(many) is None


@pytest.mark.parametrize(
    "filler",
    [
        "x INT COMMENT '>>',",
        "x INT COMMENT 'it\\'s >',",
        'x INT COMMENT "\\">",',
        "`a>` INT,",
        "`a``>` INT,",
        "/* > */",
        "/* /* */ > */",
        "-- >\n",
        "-- a \\\n >\n",
        "x INT COMMENT r'\\',",
        'x INT COMMENT R"\\",',
        "x INT COMMENT fooR'\\'>',",
    ],
)
def test_a_ddl_is_read_as_sparks_lexer_reads_it(filler: str) -> None:
    """What Spark skips (strings, raw strings, quoted names, comments, nested ones and
    a `--` comment continued past a newline) can neither add a level nor hide one."""
    assert ddl_nesting_problem(ddl_arrays(MAX_NESTING, filler)) is None
    assert ddl_nesting_problem(ddl_arrays(MAX_NESTING + 1, filler)) is not None


def test_a_hint_is_no_comment() -> None:
    assert ddl_nesting_problem("/*+ " + "<" * (MAX_NESTING + 1) + " */") is not None


def test_an_avro_schema_too_deep_is_a_problem_on_its_key() -> None:
    config = {"value.converter": "avro", "value.converter.avro.wire.format": "plain"}
    deepest = {**config, "value.converter.avro.schema": avro_arrays(MAX_NESTING)}
    assert problems(deepest) == {}
    deeper = {**config, "value.converter.avro.schema": avro_arrays(MAX_NESTING + 1)}
    assert BOUND in problems(deeper)["value.converter.avro.schema"]
    brackets = {**config, "value.converter.avro.schema": "[" * 60_000}
    assert BOUND in problems(brackets)["value.converter.avro.schema"]


@pytest.mark.parametrize("side", ["key", "value"])
def test_a_ddl_schema_too_deep_is_a_problem_on_its_key(side: str) -> None:
    config = {f"{side}.converter": "json", f"{side}.converter.schemas.enable": "false"}
    assert problems({**config, f"{side}.schema": ddl_arrays(MAX_NESTING)}) == {}
    found = problems({**config, f"{side}.schema": "ARRAY<" * 10_000 + "INT" + ">" * 10_000})
    assert BOUND in found[f"{side}.schema"]


def test_an_envelope_schema_too_deep_is_unmappable_before_it_is_walked() -> None:
    found: DataType = spark_type(envelope_arrays(MAX_NESTING))
    for _ in range(MAX_NESTING - 1):
        assert isinstance(found, ArrayType)
        found = found.elementType
    assert found == IntegerType()
    with pytest.raises(UnmappableTypeError, match=BOUND):
        spark_type(envelope_arrays(MAX_NESTING + 1))
    with pytest.raises(UnmappableTypeError, match=BOUND):
        spark_type(envelope_arrays(5_000))
