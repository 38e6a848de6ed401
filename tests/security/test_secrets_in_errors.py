"""A config error names the setting and the problem, never a secret: its message reaches
a 400, `/config/validate`, a FAILED task's trace and the log. A value that came from a
placeholder is shown as the placeholder, wherever in a message it appears."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, SecretStr

from tests.support.plugins import plugins_with_secrets
from worker.admission.connector_configs import RegistryPlugins
from worker.config.providers import hide
from worker.connectors.files.kafka_to_files import KafkaToFilesSettings
from worker.plugins.api import HIDDEN, ConnectorConfigError, parse_config, secret_keys

SECRET = "s3cr3t-Pa55"
JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    f'username="u" password="{SECRET}";'
)


class Vault(BaseModel):
    token: SecretStr = Field(alias="vault.token", min_length=20)
    optional_token: SecretStr | None = Field(default=None, alias="vault.optional.token")
    retries: int = Field(default=3, alias="vault.retries")


def refusal(model: type[BaseModel], config: dict[str, str]) -> str:
    with pytest.raises(ConnectorConfigError) as refused:
        parse_config(model, config)
    return str(refused.value)


def test_a_check_of_the_whole_config_does_not_echo_it() -> None:
    """The SASL check sees every key at once; its error used to print them all, the
    JAAS password with them."""
    message = refusal(
        KafkaToFilesSettings,
        {
            "kafka.bootstrap.servers": "127.0.0.1:9",
            "topics": "t",
            "output.path": "/tmp/out",
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": JAAS,
        },
    )
    assert "sasl.mechanism PLAIN needs" in message
    assert SECRET not in message


def test_a_secret_setting_is_hidden_and_another_setting_is_shown() -> None:
    message = refusal(Vault, {"vault.token": SECRET, "vault.retries": "soon"})
    assert SECRET not in message
    assert f"vault.token: invalid value {HIDDEN}" in message
    assert "vault.retries: invalid value 'soon'" in message


class Strict(BaseModel):
    jaas: int = Field(alias="kafka.sasl.jaas.config")
    key_password: int = Field(alias="consumer.ssl.key.password")


def test_kafkas_own_password_keys_are_hidden_under_any_prefix() -> None:
    message = refusal(
        Strict, {"kafka.sasl.jaas.config": SECRET, "consumer.ssl.key.password": SECRET}
    )
    assert SECRET not in message
    assert message.count(HIDDEN) == 2


def test_secret_keys_are_the_secret_str_settings() -> None:
    assert secret_keys(Vault) == {"vault.token", "vault.optional.token"}


@pytest.fixture
def registry(tmp_path: Path) -> RegistryPlugins:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "word").write_text(SECRET + "\n")
    return plugins_with_secrets(secrets, tmp_path, tasks_max_limit=10)


@pytest.mark.parametrize(
    "settings",
    [
        {"input.path": "{root}/checkpoints/{secret}"},
        {"input.format": "{secret}"},
        {"kafka.security.protocol": "{secret}"},
        {
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "{secret}",
            "kafka.sasl.jaas.config": "x",
        },
        {"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": "/no/{secret}"},
    ],
)
def test_no_check_quotes_a_resolved_secret(
    registry: RegistryPlugins, tmp_path: Path, settings: dict[str, str]
) -> None:
    """Each of these 400s once quoted the secret: a path overlap, an enum, a check of the
    whole config (which upper-cased it), a file that cannot be read."""
    placeholder = f"${{dir:{tmp_path / 'secrets'}:word}}"
    config = {
        "connector.class": "files-to-kafka",
        "kafka.bootstrap.servers": "127.0.0.1:9",
        "topic": "t",
        "input.path": str(tmp_path / "in"),
        "input.format": "json",
        "input.schema": "a INT",
        **{k: v.format(root=tmp_path, secret=placeholder) for k, v in settings.items()},
    }
    for check in (partial(registry.admit, config, {}), partial(registry.validate, config)):
        with pytest.raises(ValueError) as refused:
            check()
        assert SECRET.lower() not in str(refused.value).lower()
        assert placeholder in str(refused.value)


def test_a_trace_shows_placeholders_not_what_they_resolve_to(
    registry: RegistryPlugins, tmp_path: Path
) -> None:
    placeholder = f"${{dir:{tmp_path / 'secrets'}:word}}"
    trace = f"Py4JJavaError: cannot write /data/{SECRET}/x\n  path='/data/{SECRET.upper()}'"
    shown = registry.hide(trace, {"output.path": f"/data/{placeholder}"}, {"other": "plain"})
    assert SECRET.lower() not in shown.lower()
    assert shown.count(placeholder) == 2
    assert hide("nothing secret here", {}) == "nothing secret here"
