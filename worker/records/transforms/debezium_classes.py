"""Debezium's `ExtractNewRecordState` (3.6.1.Final), with the settings its `ConfigDef`
declares."""

from __future__ import annotations

from typing import Final

from worker.records.transforms.definitions import DEBEZIUM, DEBEZIUM_VERSION, Plugin, Setting

EXTRACT_NEW_RECORD_STATE: Final = Plugin(
    f"{DEBEZIUM}ExtractNewRecordState",
    "transformation",
    "Replaces a Debezium change event with the row's new state, handling deletes and "
    "tombstones as `delete.tombstone.handling.mode` says; other records pass unchanged.",
    (
        Setting(
            "delete.tombstone.handling.mode",
            "STRING",
            "MEDIUM",
            "drop: deletes and tombstones leave the stream; tombstone: a delete leaves "
            "a record with a null value, tombstones leave; rewrite: a delete leaves its "
            "old row with `__deleted=true` (others `false`), tombstones leave; "
            "rewrite-with-tombstone: as rewrite, tombstones stay; delete-to-tombstone: "
            "a delete becomes a tombstone, tombstones leave.",
            default="tombstone",
            choices=(
                "drop",
                "tombstone",
                "rewrite",
                "rewrite-with-tombstone",
                "delete-to-tombstone",
            ),
        ),
        Setting(
            "route.by.field",
            "STRING",
            "LOW",
            "A field of the row whose value becomes the record's topic.",
            default="",
        ),
        Setting(
            "add.fields.prefix",
            "STRING",
            "LOW",
            "What each added field's name starts with.",
            default="__",
        ),
        Setting(
            "add.fields",
            "LIST",
            "LOW",
            "Fields of the event to add to the row (`op`, `ts_ms`, `source.db`, ...), "
            "each as the prefix and its name (`source_` before a `source.` field named "
            "in full), or as `field:name`.",
            default="",
        ),
        Setting(
            "add.headers.prefix",
            "STRING",
            "LOW",
            "What each added header's name starts with.",
            default="__",
        ),
        Setting(
            "add.headers",
            "LIST",
            "LOW",
            "Fields of the event to add as headers, named as in `add.fields`.",
            default="",
        ),
        Setting(
            "drop.fields.header.name",
            "STRING",
            "LOW",
            "A header listing fields to drop from the row (not supported here).",
        ),
        Setting(
            "drop.fields.from.key",
            "BOOLEAN",
            "LOW",
            "With `drop.fields.header.name`: drop the fields from the key too.",
            default="false",
        ),
        Setting(
            "drop.fields.keep.schema.compatible",
            "BOOLEAN",
            "LOW",
            "With `drop.fields.header.name`: drop only optional fields.",
            default="true",
        ),
    ),
    version=DEBEZIUM_VERSION,
)
