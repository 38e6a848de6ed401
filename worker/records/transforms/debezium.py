"""Debezium's `ExtractNewRecordState`: a change event (`before`, `after`, `op`, `source`,
`ts_ms`, ...) becomes the row it leaves, deletes and tombstones handled as
`delete.tombstone.handling.mode` says.

Debezium knows an event by its schema's name (`...Envelope`), which Spark types do not
carry; here a value is an event when its type is a struct with a struct `after` and a
string `op`, decided once for the query. Other values pass unchanged, as Debezium passes
records that are no events; tombstones are handled either way. `add.fields` and
`add.headers` take fields of the event (`op`, `ts_ms`, `source.*`, `transaction.*`) as
Debezium names them; a field the event's type lacks is left out, as in Debezium.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql.types import DataType, StringType, StructField, StructType

from worker.records.transforms.class_checks import (
    DROP_KEEPING_TOMBSTONES,
    TOMBSTONE_KEEPING_TOMBSTONES,
    EventField,
    delete_mode,
    event_fields,
)
from worker.records.transforms.config import Configured
from worker.records.transforms.headers import header, header_text, with_headers
from worker.records.transforms.record import (
    TOPIC,
    VALUE,
    ChainContext,
    ChainProblem,
    Change,
    Record,
    describe,
)
from worker.records.transforms.routing import routed

if TYPE_CHECKING:
    from pyspark.sql import Column

DELETED: Final = "__deleted"
REWRITE_MODES: Final = frozenset({"rewrite", "rewrite-with-tombstone"})
KEEPS_TOMBSTONES: Final = frozenset(
    {"rewrite-with-tombstone", DROP_KEEPING_TOMBSTONES, TOMBSTONE_KEEPING_TOMBSTONES}
)
DROPS_DELETES: Final = frozenset({"drop", DROP_KEEPING_TOMBSTONES})


def is_event(data_type: DataType) -> bool:
    if not isinstance(data_type, StructType):
        return False
    fields = {field.name: field.dataType for field in data_type.fields}
    return isinstance(fields.get("after"), StructType) and isinstance(fields.get("op"), StringType)


def extract_new_record_state(
    configured: Configured, record: Record, context: ChainContext
) -> Change:
    from pyspark.sql import functions as f

    mode = delete_mode(configured)
    value = f.col(VALUE)
    tombstone = value.isNull()
    keep_tombstones = mode in KEEPS_TOMBSTONES
    headers = _headers(configured, record.value_type)
    if not is_event(record.value_type):
        return Change(headers=headers, drop=tombstone & f.lit(not keep_tombstones))
    event = record.value_type
    assert isinstance(event, StructType)
    after, before = (
        value["after"],
        value["before"] if "before" in event.fieldNames() else f.lit(None),
    )
    row_type = event["after"].dataType
    if "before" in event.fieldNames() and event["before"].dataType != row_type:
        raise ChainProblem(
            configured.key("type"),
            f"the event's before ({describe(event['before'].dataType)}) and after "
            f"({describe(row_type)}) differ",
        )
    added = _added_fields(configured, event)
    deleted = ~tombstone & after.isNull() & before.isNotNull()
    truncated = ~tombstone & after.isNull() & before.isNull()
    rewrite = mode in REWRITE_MODES
    row = f.when(after.isNotNull(), _row(after, row_type, "false" if rewrite else None, added))
    if rewrite:
        row = row.when(deleted, _row(before, row_type, "true", added))
    drop = (
        (tombstone & f.lit(not keep_tombstones))
        | truncated
        | (deleted & f.lit(mode in DROPS_DELETES))
    )
    change = Change(value=row, headers=headers, drop=drop)
    field = configured.text("route.by.field") or ""
    if not field:
        return change
    _route_field(configured, row_type, field)
    routed_to = f.when(after.isNotNull(), after[field]).when(deleted, before[field])
    topic = f.when(f.trim(f.coalesce(routed_to, f.lit(""))) != "", routed_to).otherwise(
        f.col(TOPIC)
    )
    return Change(value=row, topic=topic, headers=headers, drop=drop, error=routed(topic, context))


def _row(
    row: Column, row_type: DataType, deleted: str | None, added: list[tuple[str, Column]]
) -> Column:
    from pyspark.sql import functions as f

    assert isinstance(row_type, StructType)
    fields = [row[name].alias(name) for name in row_type.fieldNames()]
    if deleted is not None:
        fields.append(f.lit(deleted).alias(DELETED))
    fields += [column.alias(name) for name, column in added]
    return f.struct(*fields)


def _located(event: StructType, reference: EventField) -> tuple[Column, StructField] | None:
    """The column and field of a field of the event, or None where its type lacks it."""
    from pyspark.sql import functions as f

    value = f.col(VALUE)
    if reference.struct is not None:
        if reference.struct not in event.fieldNames():
            return None
        parent = event[reference.struct].dataType
        if isinstance(parent, StructType) and reference.field in parent.fieldNames():
            return value[reference.struct][reference.field], parent[reference.field]
    if reference.field in event.fieldNames():
        return value[reference.field], event[reference.field]
    return None


def _added_fields(configured: Configured, event: StructType) -> list[tuple[str, Column]]:
    prefix = configured.text("add.fields.prefix") or ""
    found = []
    for reference in event_fields(prefix, configured.items("add.fields")):
        located = _located(event, reference)
        if located is not None:
            found.append((reference.name, located[0]))
    return found


def _headers(configured: Configured, value_type: DataType) -> Column | None:
    """The `add.headers`: of an event's fields, and `op` (`d`) on a tombstone."""
    from pyspark.sql import functions as f

    prefix = configured.text("add.headers.prefix") or ""
    references = event_fields(prefix, configured.items("add.headers"))
    if not references:
        return None
    value = f.col(VALUE)
    added: list[Column] = []
    for reference in references:
        assert isinstance(value_type, StructType) or not is_event(value_type)
        located = (
            _located(value_type, reference)
            if isinstance(value_type, StructType) and is_event(value_type)
            else None
        )
        if located is not None:
            text = header_text(located[0], located[1].dataType)
            added.append(f.when(value.isNotNull(), header(reference.name, text)))
        if reference.field == "op" and reference.struct is None:
            added.append(f.when(value.isNull(), header(reference.name, f.lit("d"))))
    if not added:
        return None
    return f.concat(with_headers([]), f.filter(f.array(*added), lambda h: h.isNotNull()))


def _route_field(configured: Configured, row_type: DataType, name: str) -> None:
    assert isinstance(row_type, StructType)
    if name not in row_type.fieldNames() or not isinstance(row_type[name].dataType, StringType):
        raise ChainProblem(
            configured.key("route.by.field"), f"the row has no string field {name!r}"
        )
