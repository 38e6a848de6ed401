"""Which function builds each class of the catalog into Spark columns: transforms into
a `Change`, predicates into a boolean column. Every class the catalog lists has one (a
test holds them to each other), so a config that names a class runs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from worker.records.transforms.casts import cast
from worker.records.transforms.config import Configured
from worker.records.transforms.debezium import extract_new_record_state
from worker.records.transforms.fields import (
    extract_field,
    hoist_field,
    insert_field,
    mask_field,
    replace_field,
    set_schema_metadata,
    value_to_key,
)
from worker.records.transforms.flatten import flatten
from worker.records.transforms.headers import drop_headers, header_from, insert_header
from worker.records.transforms.record import ChainContext, Change, Record
from worker.records.transforms.routing import (
    filter_records,
    has_header_key,
    record_is_tombstone,
    regex_router,
    timestamp_router,
    topic_name_matches,
)
from worker.records.transforms.timestamps import timestamp_converter

if TYPE_CHECKING:
    from pyspark.sql import Column

TransformBuilder = Callable[[Configured, Record, ChainContext], Change]
PredicateBuilder = Callable[[Configured, Record, ChainContext], "Column"]

TRANSFORMS: Final[Mapping[str, TransformBuilder]] = {
    "Cast": cast,
    "DropHeaders": drop_headers,
    "ExtractField": extract_field,
    "ExtractNewRecordState": extract_new_record_state,
    "Filter": filter_records,
    "Flatten": flatten,
    "HeaderFrom": header_from,
    "HoistField": hoist_field,
    "InsertField": insert_field,
    "InsertHeader": insert_header,
    "MaskField": mask_field,
    "RegexRouter": regex_router,
    "ReplaceField": replace_field,
    "SetSchemaMetadata": set_schema_metadata,
    "TimestampConverter": timestamp_converter,
    "TimestampRouter": timestamp_router,
    "ValueToKey": value_to_key,
}
PREDICATES: Final[Mapping[str, PredicateBuilder]] = {
    "HasHeaderKey": has_header_key,
    "RecordIsTombstone": record_is_tombstone,
    "TopicNameMatches": topic_name_matches,
}


def build_transform(configured: Configured, record: Record, context: ChainContext) -> Change:
    return TRANSFORMS[configured.family](configured, record, context)


def build_predicate(configured: Configured, record: Record, context: ChainContext) -> Column:
    return PREDICATES[configured.family](configured, record, context)
