"""Secrets hidden in the configs the REST API shows, and kept when a shown config comes
back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.plugins import plugins_for
from worker.admission.registry import PluginRegistry
from worker.admission.shown_configs import HiddenSecretError, kept_secrets, shown_config
from worker.connectors import default_registry
from worker.plugins.api import HIDDEN

CONFIG = {
    "connector.class": "kafka-to-jdbc",
    "connection.url": "jdbc:postgresql://127.0.0.1:5432/shop",
    "connection.password": "s3cret",
    "kafka.sasl.jaas.config": 'ScramLoginModule required password="x";',
    "token": "abc",
}


def test_secrets_of_the_plugin_and_kafka_s_own_are_hidden_the_rest_shown() -> None:
    assert shown_config(CONFIG, frozenset({"token"})) == {
        **CONFIG,
        "connection.password": HIDDEN,
        "kafka.sasl.jaas.config": HIDDEN,
        "token": HIDDEN,
    }


def test_a_placeholder_is_shown_as_it_says_where_the_secret_is_not_what() -> None:
    config = {"connection.password": " ${file:/etc/secrets/db.properties:password} "}
    assert shown_config(config, frozenset()) == config
    mixed = {"connection.password": "pre${env:DB_PASSWORD}"}
    assert shown_config(mixed, frozenset()) == {"connection.password": HIDDEN}


def test_a_hidden_secret_given_back_keeps_the_stored_value_and_a_new_one_replaces_it() -> None:
    shown = shown_config(CONFIG, frozenset({"token"}))
    assert kept_secrets(shown, CONFIG, frozenset({"token"})) == CONFIG
    changed = {**shown, "connection.password": "n3w"}
    assert kept_secrets(changed, CONFIG, frozenset({"token"}))["connection.password"] == "n3w"


def test_hidden_is_a_value_like_any_other_where_the_key_holds_no_secret() -> None:
    assert kept_secrets({"topic": HIDDEN}, {}, frozenset()) == {"topic": HIDDEN}


def test_a_hidden_secret_with_nothing_stored_is_refused_naming_the_key() -> None:
    with pytest.raises(HiddenSecretError, match=r"connection\.password is \[hidden\]"):
        kept_secrets({"connection.password": HIDDEN}, {}, frozenset())


def test_a_plugin_s_secret_keys_are_its_password_settings(tmp_path: Path) -> None:
    plugins = plugins_for(default_registry(), tmp_path)
    assert "connection.password" in plugins.secret_keys({"connector.class": "kafka-to-jdbc"})
    assert "iceberg.catalog.jdbc.password" in plugins.secret_keys(
        {"connector.class": "kafka-to-iceberg"}
    )
    unknown = plugins_for(PluginRegistry(), tmp_path)
    assert unknown.secret_keys({"connector.class": "kafka-to-jdbc"}) == frozenset()
