"""The transforms that pick, rename, add, mask or wrap fields: MaskField, ReplaceField,
InsertField, HoistField, ExtractField, ValueToKey and SetSchemaMetadata.

Where Connect keeps a null key or value as it is (ReplaceField, InsertField,
ExtractField), so do these; where it needs a struct and finds null (MaskField,
ValueToKey: a tombstone) the record fails, as in Connect. A field a setting names must be
in the struct: Connect fails each record on some of these (MaskField, ExtractField) and
ignores others (ReplaceField); here every one is refused before a record comes, as the
typo it usually is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.types import DataType, StructType

from worker.records.transforms.class_checks import field_path, insertion, renames
from worker.records.transforms.config import Configured
from worker.records.transforms.masks import masked
from worker.records.transforms.record import (
    KEY,
    OFFSET,
    PARTITION,
    TIMESTAMP,
    TOPIC,
    VALUE,
    ChainContext,
    ChainProblem,
    Change,
    Record,
    describe,
    field_of,
    null_error,
    on,
    side,
    struct_of,
)

if TYPE_CHECKING:
    from pyspark.sql import Column


def rebuilt(part: str, fields: list[Column]) -> Column:
    """A struct of `fields`, null where the part is null."""
    from pyspark.sql import functions as f

    return f.when(f.col(part).isNotNull(), f.struct(*fields))


def unique_names(configured: Configured, names: list[str], setting: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ChainProblem(
                configured.key(setting), f"the result would have two fields named {name!r}"
            )
        seen.add(name)


def mask_field(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    struct = struct_of(configured, record, part)
    wanted = set(configured.items("fields"))
    for name in configured.items("fields"):
        field_of(configured, struct, name, "fields")
    replacement = configured.text("replacement")
    fields = []
    for field in struct.fields:
        column = f.col(part)[field.name]
        if field.name in wanted:
            mask = masked(configured, field.dataType, replacement)
            column = f.when(column.isNotNull(), mask)
        fields.append(column.alias(field.name))
    return on(part, rebuilt(part, fields), null_error(part, "mask fields"))


def replace_field(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    struct = struct_of(configured, record, part)
    mapping = renames(configured.items("renames"))
    exclude, include = set(configured.items("exclude")), set(configured.items("include"))
    for setting, names in (("exclude", exclude), ("include", include), ("renames", mapping)):
        for name in names:
            field_of(configured, struct, name, setting)
    kept = [
        (field.name, mapping.get(field.name, field.name))
        for field in struct.fields
        if field.name not in exclude and (not include or field.name in include)
    ]
    unique_names(configured, [new for _, new in kept], "renames")
    fields = [f.col(part)[old].alias(new) for old, new in kept]
    return on(part, rebuilt(part, fields))


def insert_field(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    struct = struct_of(configured, record, part)
    schemaless = part in context.schemaless
    timestamp = f.col(TIMESTAMP) if not schemaless else f.unix_millis(f.col(TIMESTAMP))
    static = configured.text("static.value")
    sources: list[tuple[str, Column]] = [
        ("topic.field", f.col(TOPIC)),
        ("partition.field", f.col(PARTITION).cast("int")),
        ("offset.field", f.col(OFFSET).cast("long")),
        ("timestamp.field", timestamp),
        ("static.field", f.lit(static).cast("string")),
    ]
    added: dict[str, Column] = {}
    for setting, column in sources:
        spec = insertion(configured.text(setting))
        if spec is None:
            continue
        if setting == "offset.field" and not context.read_from_kafka:
            raise ChainProblem(
                configured.key(setting), "only records read from Kafka have an offset"
            )
        added[spec[0]] = column
    if not schemaless:
        unique_names(configured, [*struct.fieldNames(), *added], "type")
    fields = [f.col(part)[n].alias(n) for n in struct.fieldNames() if n not in added]
    fields += [column.alias(name) for name, column in added.items()]
    return on(part, rebuilt(part, fields))


def hoist_field(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    name = configured.text("field") or ""
    return on(part, f.struct(f.col(part).alias(name)))


def extract_field(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    part = side(configured)
    steps = field_path(
        configured.text("field") or "", configured.text("field.syntax.version") or "V1"
    )
    current: DataType = struct_of(configured, record, part)
    column = f.col(part)
    for step in steps:
        if not isinstance(current, StructType):
            raise ChainProblem(
                configured.key("field"),
                f"{step!r} is a step into a {describe(current)}, which has no fields",
            )
        current = field_of(configured, current, step, "field").dataType
        column = column[step]
    return on(part, column)


def value_to_key(configured: Configured, record: Record, context: ChainContext) -> Change:
    from pyspark.sql import functions as f

    struct = struct_of(configured, record, VALUE)
    names = list(configured.items("fields"))
    for name in names:
        field_of(configured, struct, name, "fields")
    key = f.struct(*(f.col(VALUE)[name].alias(name) for name in dict.fromkeys(names)))
    return on(KEY, key, null_error(VALUE, "copying fields from value to key"))


def set_schema_metadata(configured: Configured, record: Record, context: ChainContext) -> Change:
    """Spark types have no names: the name and version ride on the column's metadata
    (`connect.name`, `connect.version`), for a converter that writes a schema."""
    part = side(configured)
    if part in context.schemaless:
        raise ChainProblem(
            configured.key("type"),
            f"SetSchemaMetadata needs a schema, and the {part} converter reads none "
            "(JsonConverter with schemas.enable=false)",
        )
    metadata: dict[str, object] = {}
    if (name := configured.text("schema.name")) is not None:
        metadata["connect.name"] = name
    if (version := configured.number("schema.version")) is not None:
        metadata["connect.version"] = version
    return Change(metadata={part: metadata})
