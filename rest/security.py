"""The REST server's TLS and authentication settings, read from the worker config once at
start-up: its listener's certificate, who may call, and which CAs to trust when
forwarding to another worker.

The keys (`listeners.https.*`, `rest.auth*`) are the worker config's; they are checked
here, and a credentials file is read here, once, before the worker starts anything: a
typo in the file stops the worker with one line instead of locking every client out later.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rest.auth import Scheme
from rest.worker_seam import WorkerConfig

CREDENTIALS: Final = "rest.auth.credentials"
CREDENTIALS_FILE: Final = "rest.auth.credentials.file"
_CA_FILE: Final = "listeners.https.ssl.cafile"


@dataclass(frozen=True)
class RestSecurity:
    auth: tuple[Scheme, Sequence[str]] | None = None
    """The scheme and accepted credentials; None when `rest.auth=none`."""
    peer_verify: ssl.SSLContext | bool = True
    """How forwarding checks the leader's certificate: a context trusting
    `listeners.https.ssl.cafile`, else the system CAs. Built once: given True, httpx
    builds one for every forwarded request, 30-57 ms of CPU on the event loop."""
    certfile: Path | None = None
    """The listener's PEM certificate (`listeners.https.ssl.certfile`)."""
    keyfile: Path | None = None
    """The listener's PEM private key (`listeners.https.ssl.keyfile`)."""

    @classmethod
    def from_config(cls, config: WorkerConfig) -> RestSecurity:
        """Raise `ConfigError` naming the key when the settings do not hold together."""
        auth = _auth(config)
        _check_tls_files(config)
        ca = config.listeners_https_ssl_cafile
        return cls(
            auth=auth,
            peer_verify=ssl.create_default_context(cafile=None if ca is None else str(ca)),
            certfile=config.listeners_https_ssl_certfile,
            keyfile=config.listeners_https_ssl_keyfile,
        )


def _auth(config: WorkerConfig) -> tuple[Scheme, tuple[str, ...]] | None:
    """The scheme and its credentials, from exactly one of the two credentials keys."""
    if config.rest_auth == "none":
        return None
    given = [
        key
        for key, value in (
            (CREDENTIALS, config.rest_auth_credentials),
            (CREDENTIALS_FILE, config.rest_auth_credentials_file),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise config.error(
            f"'rest.auth={config.rest_auth}' needs exactly one of '{CREDENTIALS}' "
            f"and '{CREDENTIALS_FILE}' (got {len(given)})",
            "rest.auth",
        )
    entries = _credentials(config)
    if not entries:
        raise config.error(f"'{given[0]}' holds no credentials", given[0])
    if config.rest_auth == "basic":
        for number, entry in enumerate(entries, start=1):
            if not entry.partition(":")[0] or ":" not in entry:
                raise config.error(f"'{given[0]}' entry {number} must be user:password", given[0])
    return config.rest_auth, entries


def _credentials(config: WorkerConfig) -> tuple[str, ...]:
    """The accepted `user:password` pairs or tokens, from the value or the file."""
    if config.rest_auth_credentials is not None:
        return _entries(config.rest_auth_credentials.get_secret_value().split(","))
    path = config.rest_auth_credentials_file
    if path is None:
        return ()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise config.error(
            f"'{CREDENTIALS_FILE}' cannot be read ({path}): {exc}", CREDENTIALS_FILE
        ) from None
    return _entries(text.splitlines())


def _entries(lines: Sequence[str]) -> tuple[str, ...]:
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def _check_tls_files(config: WorkerConfig) -> None:
    """An https listener needs its certificate and key; every file given must exist."""
    if config.rest_scheme == "http":
        return
    for key, path in (
        ("listeners.https.ssl.certfile", config.listeners_https_ssl_certfile),
        ("listeners.https.ssl.keyfile", config.listeners_https_ssl_keyfile),
        (_CA_FILE, config.listeners_https_ssl_cafile),
    ):
        if path is None and key != _CA_FILE:
            raise config.error(f"an https listener needs '{key}'", key)
        if path is not None and not path.is_file():
            raise config.error(f"'{key}' must be a readable file (got '{path}')", key)
