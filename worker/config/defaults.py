"""The worker config's defaults, including those that follow other keys, as Kafka Connect's.

`group.id` names the three storage topics, `rest.host.name` and `rest.port` are what a
worker advertises unless told otherwise, and `listeners` wins over both. A value derived
this way can still be wrong, so an error about one says which key it came from
(`DERIVED_FROM`).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from typing import Final

from worker.config.errors import invalid

DEFAULT_GROUP_ID: Final = "sparkherd"
DEFAULT_REST_HOST: Final = "127.0.0.1"
DEFAULT_REST_PORT: Final = 8083
DEFAULT_SPARK_MASTER: Final = "local[*]"
DEFAULT_CHECKPOINT_ROOT: Final = "./.sparkherd/checkpoints"
DEFAULT_DATA_DIR: Final = "./.sparkherd"

DERIVED_FROM: Final = {
    "config.storage.topic": "group.id",
    "status.storage.topic": "group.id",
    "offset.storage.topic": "group.id",
    "rest.advertised.host.name": "rest.host.name",
    "rest.advertised.port": "rest.port",
}

_WILDCARD_HOSTS = frozenset({"0.0.0.0", "::"})
_LISTENER = re.compile(
    r"(?P<scheme>https?)://(?:\[(?P<ipv6>[^\]]+)\]|(?P<host>[^:\[\]]*)):(?P<port>[0-9]+)",
    re.IGNORECASE,
)


def with_derived_defaults(values: Mapping[str, object]) -> dict[str, object]:
    """`values` (dotted keys) with every default that follows another key filled in."""
    derived = {**values, **_listener_address(values.get("listeners"))}
    group_id = derived.get("group.id", DEFAULT_GROUP_ID)
    derived.setdefault("config.storage.topic", f"{group_id}-configs")
    derived.setdefault("status.storage.topic", f"{group_id}-status")
    derived.setdefault("offset.storage.topic", f"{group_id}-offsets")
    rest_host = derived.get("rest.host.name", DEFAULT_REST_HOST)
    advertised_host = socket.gethostname() if rest_host in _WILDCARD_HOSTS else rest_host
    derived.setdefault("rest.advertised.host.name", advertised_host)
    derived.setdefault("rest.advertised.port", derived.get("rest.port", DEFAULT_REST_PORT))
    return derived


def _listener_address(listeners: object) -> dict[str, object]:
    """`rest.host.name` and `rest.port` from `listeners`, which wins over them as in
    Kafka Connect; an empty host means every interface. One listener only."""
    if listeners is None or listeners == "":
        return {}
    match = _LISTENER.fullmatch(str(listeners))
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise invalid(
            "'listeners' must be one URL, http://host:port or https://host:port "
            f"(got {listeners!r})",
            "listeners",
        )
    host = match["ipv6"] or match["host"] or "0.0.0.0"
    return {"rest.host.name": host, "rest.port": match["port"]}
