"""Apache Kafka's own transforms and predicates (`connect-transforms` 4.1.1), with the
settings their `ConfigDef`s declare: the classes that have a key and a value form are
listed once and made into both (`Cast$Key`, `Cast$Value`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, get_args

from worker.records.transforms.definitions import (
    NULL_DEFAULT,
    PREDICATES,
    TRANSFORMS,
    Plugin,
    Setting,
    Side,
    optional_field,
    required,
)

_SIDED: Final[tuple[tuple[str, str, tuple[Setting, ...]], ...]] = (
    (
        "Cast",
        "Casts fields, or the whole key or value, to another primitive type.",
        (
            required(
                "spec",
                "LIST",
                "HIGH",
                "`field:type` pairs to cast fields of a struct, or one `type` to cast the "
                "whole key or value; types: int8, int16, int32, int64, float32, float64, "
                "boolean, string (bytes cast to string only, as base64).",
            ),
            NULL_DEFAULT,
        ),
    ),
    (
        "ExtractField",
        "Replaces the key or value with one of its fields; null stays null.",
        (
            required("field", "STRING", "MEDIUM", "The field to take."),
            NULL_DEFAULT,
            Setting(
                "field.syntax.version",
                "STRING",
                "HIGH",
                "V1: `field` names a top-level field; V2: a dotted path into nested "
                "structs, a name with dots in backticks.",
                default="V1",
                choices=("V1", "V2"),
            ),
        ),
    ),
    (
        "Flatten",
        "Lifts the fields of nested structs to the top level, joining the names.",
        (
            Setting(
                "delimiter",
                "STRING",
                "MEDIUM",
                "What joins a nested field's name to its parents' names.",
                default=".",
            ),
        ),
    ),
    (
        "HeaderFrom",
        "Copies or moves fields of the key or value into headers.",
        (
            required("fields", "LIST", "HIGH", "The fields whose values become headers."),
            required(
                "headers", "LIST", "HIGH", "The header names, one for each of `fields`, in order."
            ),
            Setting(
                "operation",
                "STRING",
                "HIGH",
                "`move`: the fields leave the key or value; `copy`: they stay.",
                required=True,
                choices=("move", "copy"),
            ),
            NULL_DEFAULT,
        ),
    ),
    (
        "HoistField",
        "Wraps the key or value into a struct of one field.",
        (required("field", "STRING", "MEDIUM", "The name of the one field."),),
    ),
    (
        "InsertField",
        "Adds fields holding the record's topic, partition, offset, timestamp or a fixed string.",
        (
            optional_field("topic.field", "the record's topic"),
            optional_field("partition.field", "the record's partition"),
            optional_field("offset.field", "the record's offset (records read from Kafka)"),
            optional_field("timestamp.field", "the record's timestamp"),
            optional_field("static.field", "`static.value`"),
            Setting("static.value", "STRING", "MEDIUM", "The fixed string of `static.field`."),
            NULL_DEFAULT,
        ),
    ),
    (
        "MaskField",
        "Replaces fields' values with an empty value of their type (0, false, empty "
        "string, empty array or map, the epoch) or with `replacement`.",
        (
            required("fields", "LIST", "HIGH", "The fields to mask."),
            Setting(
                "replacement",
                "STRING",
                "LOW",
                "A value for every masked field instead, converted to the field's type "
                "(numbers and strings only).",
            ),
            NULL_DEFAULT,
        ),
    ),
    (
        "ReplaceField",
        "Keeps, drops and renames fields.",
        (
            Setting(
                "exclude", "LIST", "MEDIUM", "Fields to drop; wins over `include`.", default=""
            ),
            Setting(
                "include", "LIST", "MEDIUM", "Fields to keep; empty keeps them all.", default=""
            ),
            Setting("renames", "LIST", "MEDIUM", "`old:new` pairs of names.", default=""),
            NULL_DEFAULT,
        ),
    ),
    (
        "SetSchemaMetadata",
        "Sets the name or version of the key's or value's schema.",
        (
            Setting("schema.name", "STRING", "HIGH", "The schema's new name."),
            Setting("schema.version", "INT", "HIGH", "The schema's new version."),
            NULL_DEFAULT,
        ),
    ),
    (
        "TimestampConverter",
        "Converts a timestamp (a field, or the whole key or value) between epoch numbers, "
        "strings and Connect's Date and Timestamp types.",
        (
            Setting(
                "field",
                "STRING",
                "HIGH",
                "The field holding the timestamp; empty: the whole key or value.",
                default="",
            ),
            Setting(
                "target.type",
                "STRING",
                "HIGH",
                "What to convert to: string, unix, Date, Time or Timestamp.",
                required=True,
                choices=("string", "unix", "Date", "Time", "Timestamp"),
            ),
            Setting(
                "format",
                "STRING",
                "MEDIUM",
                "A java.text.SimpleDateFormat pattern: how a string timestamp is written "
                "(target.type=string) or read.",
                default="",
            ),
            Setting(
                "unix.precision",
                "STRING",
                "LOW",
                "The unit of an epoch number read or written: seconds, milliseconds, "
                "microseconds or nanoseconds (through milliseconds: finer digits are lost).",
                default="milliseconds",
                choices=("nanoseconds", "microseconds", "milliseconds", "seconds"),
            ),
            NULL_DEFAULT,
        ),
    ),
)

SINGLE: Final[tuple[Plugin, ...]] = (
    Plugin(
        f"{TRANSFORMS}DropHeaders",
        "transformation",
        "Removes headers by name.",
        (required("headers", "LIST", "HIGH", "The names of the headers to remove."),),
    ),
    Plugin(
        f"{TRANSFORMS}Filter",
        "transformation",
        "Drops every record it applies to: give it a predicate to drop some.",
    ),
    Plugin(
        f"{TRANSFORMS}InsertHeader",
        "transformation",
        "Adds a header with a fixed value to every record.",
        (
            required("header", "STRING", "HIGH", "The header's name."),
            required(
                "value.literal",
                "STRING",
                "HIGH",
                "The header's value, read as Connect reads a literal (numbers, booleans, strings).",
            ),
        ),
    ),
    Plugin(
        f"{TRANSFORMS}RegexRouter",
        "transformation",
        "Renames a record's topic when a Java regular expression matches all of it.",
        (
            required("regex", "STRING", "HIGH", "The Java regular expression to match."),
            required(
                "replacement",
                "STRING",
                "HIGH",
                "The new topic; `$1`, `${name}` insert the match's groups.",
            ),
        ),
    ),
    Plugin(
        f"{TRANSFORMS}TimestampRouter",
        "transformation",
        "Renames a record's topic from its old name and its timestamp.",
        (
            Setting(
                "topic.format",
                "STRING",
                "HIGH",
                "The new topic, with `${topic}` and `${timestamp}` in it.",
                default="${topic}-${timestamp}",
            ),
            Setting(
                "timestamp.format",
                "STRING",
                "HIGH",
                "How `${timestamp}` is written: a java.text.SimpleDateFormat pattern, in UTC.",
                default="yyyyMMdd",
            ),
        ),
    ),
    Plugin(
        f"{TRANSFORMS}ValueToKey",
        "transformation",
        "Replaces the key with a struct of fields taken from the value.",
        (
            required("fields", "LIST", "HIGH", "The value's fields that make the key."),
            NULL_DEFAULT,
        ),
    ),
    Plugin(
        f"{PREDICATES}HasHeaderKey",
        "predicate",
        "True for a record with at least one header of the name.",
        (
            Setting(
                "name",
                "STRING",
                "MEDIUM",
                "The header's name (not empty).",
                required=True,
            ),
        ),
    ),
    Plugin(
        f"{PREDICATES}RecordIsTombstone",
        "predicate",
        "True for a record whose value is null.",
    ),
    Plugin(
        f"{PREDICATES}TopicNameMatches",
        "predicate",
        "True for a record whose whole topic name a Java regular expression matches.",
        (required("pattern", "STRING", "MEDIUM", "The Java regular expression (not empty)."),),
    ),
)


def sided() -> Iterator[Plugin]:
    for name, summary, settings in _SIDED:
        for side in get_args(Side):
            yield Plugin(
                f"{TRANSFORMS}{name}${side}", "transformation", summary, settings, side=side
            )
