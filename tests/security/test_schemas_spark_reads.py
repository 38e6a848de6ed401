"""Schemas that reach Spark from a config or from records, in a real local Spark: a
recursive Avro schema is a problem on its key (it answered 500 on create and validate),
and a record nested too deep for Spark's JSON inference is left out of the sample (it
hung the task's start in a StackOverflowError)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from pyspark.sql.types import LongType, StructType

from tests.support.in_process_spark import in_process_spark
from worker.plugins.api import ConnectorConfigError
from worker.records.converters.payload_types import declared_type, inferred_type
from worker.records.converters.spec import converter_spec
from worker.records.nesting import MAX_NESTING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

LINKED_LIST = json.dumps(
    {
        "type": "record",
        "name": "Node",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "next", "type": ["null", "Node"], "default": None},
        ],
    }
)


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    conf = {"spark.master": "local[1]", "spark.sql.session.timeZone": "UTC"}
    with in_process_spark("schemas-spark-reads", conf) as session:
        yield session


def test_a_recursive_avro_schema_is_a_problem_on_its_key(spark: SparkSession) -> None:
    config = {"value.converter": "avro", "value.converter.avro.schema": LINKED_LIST}
    spec = converter_spec(config, "value", "read")
    with pytest.raises(ConnectorConfigError) as refused:
        declared_type(spec, spark)
    assert [p.key for p in refused.value.problems] == ["value.converter.avro.schema"]
    assert "recursive reference" in refused.value.problems[0].message


@pytest.mark.timeout(300)
def test_a_record_nested_too_deep_is_left_out_of_json_inference(spark: SparkSession) -> None:
    deep = "[" * 300 + "1" + "]" * 300
    over_the_bound = '{"id": ' + "[" * MAX_NESTING + "1" + "]" * MAX_NESTING + "}"
    samples = [deep.encode(), over_the_bound.encode(), b'{"id": 7}']
    spec = converter_spec(
        {"value.converter": "json", "value.converter.schemas.enable": "false"}, "value", "read"
    )
    inferred = inferred_type(spec, spark, samples)
    assert isinstance(inferred, StructType)
    assert inferred["id"].dataType == LongType()
