"""Kafka Connect's security keys into aiokafka's arguments, and every mistake a user can
make with them into one message naming the key."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from worker.config import ConfigError, WorkerConfig
from worker.kafka.security import (
    KafkaSecurityError,
    SaslLogin,
    client_security,
    is_security_key,
    security_settings,
)

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
PEM_SHAPED = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
"""Only a file's shape is checked at start-up; the handshake checks the certificate."""


def test_plaintext_needs_nothing() -> None:
    security = client_security({})
    assert security.protocol == "PLAINTEXT"
    assert security.aiokafka_options() == {"security_protocol": "PLAINTEXT"}
    assert security.java_options() == {}


def test_scram_credentials_come_from_connects_jaas_syntax() -> None:
    jaas = f'{SCRAM} required username="alice" password="p\\"w;d";'
    security = client_security(
        {
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": jaas,
        }
    )
    assert security.sasl == SaslLogin("SCRAM-SHA-512", "alice", 'p"w;d')
    options = security.aiokafka_options()
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == ("alice", 'p"w;d')
    assert "p\\" not in repr(security), "the password stays out of reprs and logs"


@pytest.mark.parametrize(
    ("settings", "key", "message"),
    [
        ({"security.protocol": "TLS"}, "security.protocol", "must be one of PLAINTEXT"),
        ({"security.protocol": "SASL_SSL"}, "sasl.mechanism", "GSSAPI"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
            "sasl.jaas.config",
            "is required with SASL",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": f'{SCRAM} required username="a" password="b";',
            },
            "sasl.jaas.config",
            "needs org.apache.kafka.common.security.plain.PlainLoginModule",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": f'{PLAIN} required username="a";',
            },
            "sasl.jaas.config",
            "must give username and password",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": f'{PLAIN} required username="a" password="b"',
            },
            "sasl.jaas.config",
            "must end with ';'",
        ),
        (
            {"security.protocol": "SSL", "ssl.truststore.location": "/no/such.pem"},
            "ssl.truststore.location",
            "cannot be read",
        ),
        (
            {
                "security.protocol": "SSL",
                "ssl.truststore.location": "/etc/hostname",
                "ssl.truststore.type": "JKS",
            },
            "ssl.truststore.type",
            "JKS is not supported: give PEM files",
        ),
        (
            {"security.protocol": "SSL", "ssl.truststore.location": "/etc/hostname"},
            "ssl.truststore.location",
            "is not a PEM file",
        ),
    ],
)
def test_each_mistake_names_its_key(settings: dict[str, str], key: str, message: str) -> None:
    with pytest.raises(KafkaSecurityError, match=message) as caught:
        client_security(settings, "consumer.")
    assert caught.value.key == f"consumer.{key}"
    assert f"'consumer.{key}'" in str(caught.value)


def test_tls_reads_pem_and_checks_hostnames_unless_told_not_to(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text(PEM_SHAPED)
    security = client_security({"security.protocol": "SSL", "ssl.truststore.location": str(ca)})
    assert security.truststore == ca
    assert security.check_hostname
    unchecked = client_security(
        {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""}
    )
    context = unchecked.ssl_context()
    assert isinstance(context, ssl.SSLContext)
    assert not context.check_hostname


def test_role_prefixes_override_the_top_level_keys() -> None:
    given = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "consumer.sasl.mechanism": "SCRAM-SHA-256",
        "producer.ssl.truststore.location": "/p.pem",
        "consumer.max.poll.records": "5",
    }
    assert security_settings(given, None) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
    }
    assert security_settings(given, "consumer") == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
    }
    assert security_settings(given, "producer")["ssl.truststore.location"] == "/p.pem"
    assert is_security_key("admin.sasl.jaas.config")
    assert not is_security_key("consumer.max.poll.records")
    assert not is_security_key("connector.sasl.mechanism")


def test_the_worker_config_takes_the_keys_and_refuses_a_broken_one() -> None:
    jaas = f'{PLAIN} required username="w" password="s";'
    config = WorkerConfig(
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": jaas,
            "producer.sasl.jaas.config": f'{PLAIN} required username="p" password="t";',
        }
    )
    own = config.kafka_security().sasl
    producer = config.kafka_security("producer").sasl
    assert own is not None and own.username == "w"
    assert producer is not None and producer.username == "p"
    with pytest.raises(ConfigError, match=r"'admin\.security\.protocol' must be one of") as caught:
        WorkerConfig(**{"admin.security.protocol": "KERBEROS"})
    assert caught.value.key == "admin.security.protocol"
