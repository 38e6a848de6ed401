"""Connector names as indexes into the config snapshot a group's members share (v4).

Every payload of a 100-worker group with one task of each of 1,000 connectors per worker
names every connector: with names nothing can compress (random ones), the group's metadata
passes the broker's 1 MB limit. From v4 on a payload names a connector by its index in the
sorted connector names of the writer's config snapshot (its `ConnectorTable`) and names
only connectors outside it (one deleted since, still running) in full.

A table is identified by a fingerprint of its names, not by a config offset: most config
records (task configs, pauses) move the offset without changing the names, and members at
such different offsets still share a table. A reader resolves indexes only with the table
of the payload's fingerprint and refuses them otherwise (`UnknownConnectorTable`), so an
index is never read against another snapshot's names.

`KNOWN_TABLES` holds the tables this process has built, newest first. It is keyed by
content, so sharing it between the simulated workers of one process changes no answer.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from protocol.errors import DecodeError
from protocol.versions import INDEXED_CONNECTORS_VERSION

NO_TABLE = 0
"""The fingerprint of a payload that names every connector in full."""


class UnknownConnectorTable(DecodeError):
    """A payload refers to connectors by the indexes of a table this process does not
    hold: its writer's config snapshot names other connectors than any read here."""


@dataclass(frozen=True)
class ConnectorTable:
    """The sorted connector names of one config snapshot, and their fingerprint."""

    fingerprint: int
    names: tuple[str, ...]
    index_of: Mapping[str, int] = field(compare=False, repr=False)


def table_of(names: Iterable[str]) -> ConnectorTable:
    ordered = tuple(sorted(set(names)))
    digest = hashlib.blake2b(digest_size=8)
    for name in ordered:
        encoded = name.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(4, "big"))
        digest.update(encoded)
    fingerprint = int.from_bytes(digest.digest(), "big", signed=True) or 1
    return ConnectorTable(fingerprint, ordered, {name: i for i, name in enumerate(ordered)})


class KnownTables:
    """The last `capacity` tables built by this process, by fingerprint."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._tables: OrderedDict[int, ConnectorTable] = OrderedDict()

    def add(self, names: Iterable[str]) -> int:
        """Remember the table of `names`; its fingerprint is what payloads carry."""
        table = table_of(names)
        self._tables[table.fingerprint] = table
        self._tables.move_to_end(table.fingerprint)
        while len(self._tables) > self._capacity:
            self._tables.popitem(last=False)
        return table.fingerprint

    def get(self, fingerprint: int) -> ConnectorTable | None:
        return self._tables.get(fingerprint)

    def discard(self, fingerprint: int) -> None:
        """Drop a table, as a process that never read its connectors has none: how tests
        play a member whose config snapshot names other connectors."""
        self._tables.pop(fingerprint, None)


KNOWN_TABLES = KnownTables(capacity=64)
"""Many more than the tables of the config changes between a join and its sync, even in
the simulator, whose workers share one process."""


def subscription_table(names: Iterable[str], version: int, group_version: int) -> int:
    """The table a worker indexes its subscription by: that of its config snapshot's
    connector `names` once the whole group speaks v4, else none. A v3 leader reads an
    indexed subscription as one that owns nothing, so a worker that has seen a v3 group
    spells its connectors out until the group has moved to v4."""
    if min(version, group_version) < INDEXED_CONNECTORS_VERSION:
        return NO_TABLE
    return KNOWN_TABLES.add(names)
