"""What the REST layer needs to know about authentication and TLS, read from the worker
config once: who may call, and which CAs to trust when forwarding to another worker."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass

from rest.auth import Scheme
from worker.config import WorkerConfig


@dataclass(frozen=True)
class RestSecurity:
    auth: tuple[Scheme, Sequence[str]] | None = None
    """The scheme and accepted credentials; None when `rest.auth=none`."""
    peer_verify: ssl.SSLContext | bool = True
    """How forwarding checks the leader's certificate: a context trusting
    `listeners.https.ssl.cafile`, else the system CAs."""

    @classmethod
    def from_config(cls, config: WorkerConfig) -> RestSecurity:
        auth = None if config.rest_auth == "none" else (config.rest_auth, config.rest_credentials)
        ca = config.listeners_https_ssl_cafile
        verify = True if ca is None else ssl.create_default_context(cafile=str(ca))
        return cls(auth=auth, peer_verify=verify)
