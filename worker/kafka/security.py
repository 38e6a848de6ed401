"""How the worker's Kafka clients authenticate and encrypt: Kafka Connect's key names.

A Connect user points a worker at a secured cluster with `security.protocol`,
`sasl.mechanism`, `sasl.jaas.config` and `ssl.*`; the same keys do the same here, and
are turned into aiokafka's arguments (every client the worker opens is aiokafka) and
into `kafka.*` options for Spark's JVM Kafka connector. The worker's own clients
(membership, config/status/offsets topics) use the top-level keys; connectors' Kafka
I/O starts from the `consumer.`/`producer.`/`admin.` prefixed keys, as Connect's do,
and a connector's `kafka.*` settings override those.

Certificates are PEM files (Kafka's `ssl.*.type=PEM`): Python's ssl module reads PEM,
not JKS or PKCS12 keystores, and saying so at start-up beats a handshake failure later.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

Protocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
Mechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
ClientRole = Literal["consumer", "producer", "admin"]

PROTOCOLS: Final[tuple[Protocol, ...]] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS: Final[tuple[Mechanism, ...]] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
ROLES: Final[tuple[ClientRole, ...]] = ("consumer", "producer", "admin")
SECURITY_KEYS: Final = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.truststore.certificates",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
    }
)
"""The Connect worker keys read here; with a role prefix they set that role's clients."""

LOGIN_MODULES: Final[Mapping[str, str]] = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_JAAS = re.compile(r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)")
_JAAS_OPTION = re.compile(
    r'\s*(?P<key>[\w.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))'
)


class KafkaSecurityError(ValueError):
    """A security setting that cannot work; `key` is the key as the user wrote it."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class SaslLogin:
    mechanism: Mechanism
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class KafkaClientSecurity:
    """One client's security settings, validated; PLAINTEXT by default."""

    protocol: Protocol = "PLAINTEXT"
    sasl: SaslLogin | None = None
    truststore: Path | None = None
    truststore_pem: str | None = field(default=None, repr=False)
    keystore: Path | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    settings: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The Connect keys this was built from, for the JVM clients that read them as is."""

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    def aiokafka_options(self) -> dict[str, Any]:
        """Keyword arguments for any aiokafka client (consumer, producer, admin, client)."""
        options: dict[str, Any] = {"security_protocol": self.protocol}
        if self.sasl is not None:
            options["sasl_mechanism"] = self.sasl.mechanism
            options["sasl_plain_username"] = self.sasl.username
            options["sasl_plain_password"] = self.sasl.password
        if self.uses_tls:
            options["ssl_context"] = self.ssl_context()
        return options

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(
            cafile=str(self.truststore) if self.truststore else None,
            cadata=self.truststore_pem,
        )
        context.check_hostname = self.check_hostname
        if self.keystore is not None:
            context.load_cert_chain(self.keystore, password=self.key_password)
        return context

    def java_options(self) -> dict[str, str]:
        """The same settings as Kafka's Java client reads them (Spark's `kafka.` options)."""
        if self.protocol == "PLAINTEXT":
            return {}
        return {"security.protocol": self.protocol, **self.settings}


PLAINTEXT_CLIENT: Final = KafkaClientSecurity()


def security_settings(settings: Mapping[str, str], role: ClientRole | None) -> dict[str, str]:
    """The security keys that apply to a client: top-level ones, then `<role>.` ones."""
    chosen = {key: value for key, value in settings.items() if key in SECURITY_KEYS}
    if role is not None:
        prefix = f"{role}."
        for key, value in settings.items():
            if key.startswith(prefix) and key[len(prefix) :] in SECURITY_KEYS:
                chosen[key[len(prefix) :]] = value
    return chosen


def is_security_key(key: str) -> bool:
    """A key `security_settings` reads, with or without a role prefix."""
    role, _, rest = key.partition(".")
    return key in SECURITY_KEYS or (role in ROLES and rest in SECURITY_KEYS)


def client_security(settings: Mapping[str, str], where: str = "") -> KafkaClientSecurity:
    """Validate Connect-named security settings (no prefixes) into one client's security.

    `where` is put before a key in messages (`consumer.` or `kafka.`), so the user sees
    the key they wrote. Files are checked here, so a missing certificate is a start-up
    error and not a handshake failure much later.
    """
    protocol = settings.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise KafkaSecurityError(
            f"'{where}security.protocol' must be one of {', '.join(PROTOCOLS)} (got {protocol!r})",
            f"{where}security.protocol",
        )
    sasl = None
    if protocol.startswith("SASL_"):
        # Kafka's default mechanism is GSSAPI (Kerberos), which is not supported here.
        mechanism = settings.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism not in MECHANISMS:
            raise KafkaSecurityError(
                f"'{where}sasl.mechanism' must be one of {', '.join(MECHANISMS)} "
                f"(got {mechanism!r}; GSSAPI and OAUTHBEARER are not supported)",
                f"{where}sasl.mechanism",
            )
        sasl = _sasl_login(settings.get("sasl.jaas.config"), mechanism, where)
    tls = protocol in ("SSL", "SASL_SSL")
    truststore = _pem_file(settings, "truststore", where) if tls else None
    keystore = _pem_file(settings, "keystore", where) if tls else None
    return KafkaClientSecurity(
        protocol=protocol,
        sasl=sasl,
        truststore=truststore,
        truststore_pem=settings.get("ssl.truststore.certificates") or None,
        keystore=keystore,
        key_password=settings.get("ssl.key.password") or None,
        check_hostname=settings.get("ssl.endpoint.identification.algorithm", "https").strip() != "",
        settings=dict(settings),
    )


def _pem_file(settings: Mapping[str, str], store: str, where: str) -> Path | None:
    location = settings.get(f"ssl.{store}.location", "").strip()
    if not location:
        return None
    kind = settings.get(f"ssl.{store}.type", "").strip().upper()
    if kind not in ("", "PEM"):
        raise KafkaSecurityError(
            f"'{where}ssl.{store}.type' {kind} is not supported: give PEM files "
            f"(set '{where}ssl.{store}.type=PEM'; `openssl pkcs12` or `keytool` convert a "
            f"keystore)",
            f"{where}ssl.{store}.type",
        )
    path = Path(location)
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise KafkaSecurityError(
            f"'{where}ssl.{store}.location' cannot be read ({location}): {exc.strerror}",
            f"{where}ssl.{store}.location",
        ) from None
    if "-----BEGIN" not in text:
        raise KafkaSecurityError(
            f"'{where}ssl.{store}.location' is not a PEM file ({location}); set "
            f"'{where}ssl.{store}.type=PEM' and give PEM certificates",
            f"{where}ssl.{store}.location",
        )
    return path


def _sasl_login(jaas: str | None, mechanism: Mechanism, where: str) -> SaslLogin:
    name = f"{where}sasl.jaas.config"
    key = f"'{name}'"
    if not jaas:
        raise KafkaSecurityError(
            f"{key} is required with SASL: {LOGIN_MODULES[mechanism]} required "
            'username="..." password="...";',
            name,
        )
    head = _JAAS.match(jaas)
    if head is None:
        raise KafkaSecurityError(f"{key} must be '<LoginModule> required key=\"value\" ...;'", name)
    if head["module"] != LOGIN_MODULES[mechanism]:
        raise KafkaSecurityError(
            f"{key} names {head['module']}, but sasl.mechanism {mechanism} needs "
            f"{LOGIN_MODULES[mechanism]}",
            name,
        )
    options: dict[str, str] = {}
    rest = jaas[head.end() :]
    while (option := _JAAS_OPTION.match(rest)) is not None:
        quoted = option["quoted"]
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else option["bare"]
        options[option["key"]] = value
        rest = rest[option.end() :]
    if rest.strip() != ";":
        raise KafkaSecurityError(f"{key} must end with ';' after its options", name)
    if "username" not in options or "password" not in options:
        raise KafkaSecurityError(f"{key} must give username and password", name)
    return SaslLogin(mechanism, options["username"], options["password"])
