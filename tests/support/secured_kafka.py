"""Apache Kafka with SCRAM over TLS, as users run it: certificates made for the test by
`openssl`, SCRAM users created when the storage is formatted."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sparkherd.broker.embedded import EmbeddedBroker
from sparkherd.broker.kafka_kraft import ListenerSecurity
from tests.support.processes import running_broker

MECHANISM = "SCRAM-SHA-512"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
ADMIN = ("admin", "admin-secret")
WORKER = ("sparkherd", "worker-secret")


@dataclass(frozen=True)
class Authority:
    """A certificate authority and a server certificate it signed for 127.0.0.1."""

    ca: Path
    server_keystore: Path
    """The server's private key and certificate in one PEM file (Kafka's PEM keystore)."""


def make_authority(directory: Path, name: str = "test-ca") -> Authority:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    extensions = directory / "san.cnf"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    days = ["-days", "2"]
    commands = [
        f"req -x509 -newkey rsa:2048 -nodes -subj /CN={name} -keyout {ca_key} -out {ca}",
        f"req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout {key} -out {csr}",
        f"x509 -req -in {csr} -CA {ca} -CAkey {ca_key} -CAcreateserial -out {cert} "
        f"-extfile {extensions}",
    ]
    for command in commands:
        subprocess.run(
            ["openssl", *command.split(), *days], check=True, capture_output=True, timeout=60
        )
    keystore = directory / "server-keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text())
    return Authority(ca, keystore)


def jaas(user: tuple[str, str]) -> str:
    return f'{SCRAM_MODULE} required username="{user[0]}" password="{user[1]}";'


def client_settings(ca: Path, user: tuple[str, str] = WORKER) -> list[str]:
    """A worker's `--set` settings for this broker, in Kafka Connect's key names."""
    return [
        "security.protocol=SASL_SSL",
        f"sasl.mechanism={MECHANISM}",
        f"sasl.jaas.config={jaas(user)}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={ca}",
    ]


@contextlib.contextmanager
def secured_kafka(root: Path) -> Iterator[tuple[EmbeddedBroker, Authority]]:
    """A single-node Apache Kafka whose only client listener is SASL_SSL with SCRAM."""
    authority = make_authority(root / "tls")
    security = ListenerSecurity(
        protocol="SASL_SSL",
        settings={
            "sasl.enabled.mechanisms": MECHANISM,
            f"{MECHANISM.lower()}.sasl.jaas.config": jaas(ADMIN),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(authority.server_keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(authority.ca),
        },
        scram_users=[
            f"{MECHANISM}=[name={user},password={password}]" for user, password in (ADMIN, WORKER)
        ],
    )
    with running_broker(root, "kafka", security) as broker:
        yield broker, authority
