"""The single-node KRaft broker's configuration, checked without starting a JVM."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from sparkherd.broker.kafka_kraft import (
    KafkaKRaftEngine,
    ListenerSecurity,
    new_cluster_id,
    render_properties,
)


def test_plaintext_broker_and_controller_listen_on_the_given_host() -> None:
    props = KafkaKRaftEngine(Path("/data")).properties("127.0.0.1", 9092, 9093)
    assert props["listeners"] == "BROKER://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert props["advertised.listeners"] == "BROKER://127.0.0.1:9092"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9093"
    assert props["listener.security.protocol.map"] == "BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert props["log.dirs"] == "/data/kraft-log"
    assert props["offsets.topic.replication.factor"] == "1"


def test_a_secured_listener_carries_its_own_settings() -> None:
    security = ListenerSecurity(
        "SASL_SSL", {"sasl.enabled.mechanisms": "SCRAM-SHA-512", "ssl.keystore.type": "PEM"}
    )
    props = KafkaKRaftEngine(Path("/d"), security).properties("127.0.0.1", 1, 2)
    assert props["listener.security.protocol.map"] == "BROKER:SASL_SSL,CONTROLLER:PLAINTEXT"
    assert props["listener.name.broker.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["listener.name.broker.ssl.keystore.type"] == "PEM"


def test_properties_escape_backslashes_and_refuse_line_breaks() -> None:
    assert render_properties({"a": "x\\y", "b": "p=q"}) == "a=x\\\\y\nb=p=q\n"
    with pytest.raises(ValueError, match="line break"):
        render_properties({"listeners": "PLAINTEXT://h:1\nprocess.roles=broker"})


def test_cluster_ids_are_sixteen_random_bytes_in_base64url_never_a_dash_first() -> None:
    ids = {new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
    assert not any(i.startswith("-") for i in ids), "kafka-storage would read it as an option"
