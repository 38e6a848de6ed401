"""What a single setting's value may be: the types and checks of the worker config's fields.

Values arrive as text from a properties file, the environment or `--set`, so each type
says which text it accepts; relations between settings are the model's business.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from worker.plugins.locations import AmbiguousLocation, normal_form

JAVA_INT_MAX: Final = 2**31 - 1
KAFKA_NAME_RULE: Final = "1 to 249 letters, digits, '.', '_' or '-'"

_HOSTNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_KAFKA_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_DECIMAL_INT = re.compile(r"[+-]?[0-9]+")
_BOOTSTRAP_ENTRY = re.compile(r"(?:\[(?P<ipv6>[^\]]+)\]|(?P<host>[^:\[\]]+)):(?P<port>[0-9]+)")


def _parse_int(value: object) -> object:
    """Accept decimal text only: '8083' yes, '8083.0', '8_083' or a bool no (strict int)."""
    if isinstance(value, str) and _DECIMAL_INT.fullmatch(value):
        return int(value)
    return value


def int_field(default: int, key: str, minimum: int, maximum: int = JAVA_INT_MAX) -> Any:
    """A `JavaInt` field for `key` whose bounds its error message states."""
    return Field(
        default,
        alias=key,
        ge=minimum,
        le=maximum,
        strict=True,
        description=f"an integer between {minimum} and {maximum}",
    )


def _is_host(text: str) -> bool:
    if _HOSTNAME.fullmatch(text):
        return True
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _check_host(value: str) -> str:
    if not _is_host(value):
        raise ValueError(value)
    return value


def _check_bootstrap_servers(value: str) -> str:
    """Normalise to 'host:port,host:port'; blank entries are skipped as Kafka clients do."""
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    for entry in entries:
        match = _BOOTSTRAP_ENTRY.fullmatch(entry)
        if match is None or not 1 <= int(match["port"]) <= 65535:
            raise ValueError(entry)
        ipv6, host = match["ipv6"], match["host"]
        valid_host = _is_host(host) if host is not None else ":" in ipv6 and _is_host(ipv6)
        if not valid_host:
            raise ValueError(entry)
    if not entries:
        raise ValueError(value)
    return ",".join(entries)


def is_kafka_name(value: str) -> bool:
    """Whether Kafka accepts `value` as a topic or group name (`KAFKA_NAME_RULE`)."""
    return bool(_KAFKA_NAME.fullmatch(value)) and value not in {".", ".."}


def _check_kafka_name(value: str) -> str:
    if not is_kafka_name(value):
        raise ValueError(value)
    return value


def _normalise_protocol(value: object) -> object:
    """Kafka Connect matches protocol names case-insensitively; sessioned acts as compatible."""
    if not isinstance(value, str):
        return value
    name = value.lower()
    return "compatible" if name == "sessioned" else name


def _empty_as_unset(value: object) -> object:
    """An empty value unsets it, so `--set group.instance.id=` can undo a file entry."""
    return None if value == "" else value


def _absolute_directory(value: object) -> object:
    """Resolve against the working directory at load time, so tasks never see a relative root.

    URIs are refused rather than mangled: `Path('s3a://b/x')` would silently become
    's3a:/b/x'. Shared storage must be mounted (e.g. a read-write-many volume).
    """
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or not value or "://" in value:
        raise ValueError(value)
    return Path(value).expanduser().resolve()


def _location_roots(value: object) -> object:
    """Comma-separated locations in the normal form connectors' paths are judged in
    (`worker.plugins.locations`), resolved at load time as `checkpoint.root` is; empty: none."""
    if not isinstance(value, str):
        return value
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    try:
        return tuple(normal_form(entry, Path.cwd()) for entry in entries)
    except AmbiguousLocation:
        raise ValueError(value) from None


def _names(value: object) -> object:
    """Comma-separated names, blanks dropped; empty: none."""
    if not isinstance(value, str):
        return value
    return tuple(entry.strip() for entry in value.split(",") if entry.strip())


Host = Annotated[str, AfterValidator(_check_host)]
KafkaName = Annotated[str, AfterValidator(_check_kafka_name)]
OptionalKafkaName = Annotated[KafkaName | None, BeforeValidator(_empty_as_unset)]
JavaInt = Annotated[int, BeforeValidator(_parse_int)]
BootstrapServers = Annotated[str, AfterValidator(_check_bootstrap_servers)]
ConnectProtocol = Annotated[Literal["eager", "compatible"], BeforeValidator(_normalise_protocol)]
AbsoluteDirectory = Annotated[Path, BeforeValidator(_absolute_directory)]
LocationRoots = Annotated[tuple[str, ...], BeforeValidator(_location_roots)]
Names = Annotated[tuple[str, ...], BeforeValidator(_names)]
