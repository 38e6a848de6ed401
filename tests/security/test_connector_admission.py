"""What the leader checks before it stores a connector config (pure: no broker, no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.plugins import no_spark, plugins_with_secrets
from worker.admission.connector_configs import RegistryPlugins
from worker.admission.registry import UnknownPluginError
from worker.admission.stored_task_configs import MAX_TASK_CONFIGS_BYTES
from worker.config.providers import ConfigProviders
from worker.connectors import default_registry
from worker.plugins.api import ConnectorConfigError

SECRET = "hunter2-do-not-print"


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    directory = tmp_path / "secrets"
    directory.mkdir()
    (directory / "out").write_text(str(tmp_path / "out"))
    (directory / "rate").write_text(SECRET)
    return directory


def plugins(secrets: Path, tmp_path: Path, tasks_max_limit: int = 1000) -> RegistryPlugins:
    return plugins_with_secrets(secrets, tmp_path, tasks_max_limit)


def generator(output: str, **overrides: str) -> dict[str, str]:
    return {"connector.class": "generator", "output.path": output, "name": "g", **overrides}


def test_task_configs_keep_the_placeholder_the_plugin_copied(secrets: Path, tmp_path: Path) -> None:
    placeholder = f"${{dir:{secrets}:out}}"
    configs = plugins(secrets, tmp_path).task_configs(generator(placeholder, **{"tasks.max": "2"}))
    assert [c["output.path"] for c in configs] == [placeholder, placeholder]


def test_task_configs_over_the_topic_budget_are_refused(secrets: Path, tmp_path: Path) -> None:
    padding = "x" * (MAX_TASK_CONFIGS_BYTES // 3)
    config = generator(str(tmp_path / "out"), padding=padding, **{"tasks.max": "3"})
    with pytest.raises(ConnectorConfigError, match="task configs"):
        plugins(secrets, tmp_path).task_configs(config)
    plugins(secrets, tmp_path).task_configs({**config, "tasks.max": "2"})


def test_tasks_max_is_capped_by_the_worker(secrets: Path, tmp_path: Path) -> None:
    config = generator(str(tmp_path / "out"), **{"tasks.max": "11"})
    with pytest.raises(ConnectorConfigError, match=r"tasks\.max\.limit=10"):
        plugins(secrets, tmp_path, tasks_max_limit=10).admit(config, {})
    plugins(secrets, tmp_path, tasks_max_limit=11).admit(config, {})


def test_a_problem_with_a_resolved_value_shows_the_placeholder(
    secrets: Path, tmp_path: Path
) -> None:
    placeholder = f"${{dir:{secrets}:rate}}"
    config = generator(str(tmp_path / "out"), **{"rows.per.second": placeholder})
    registry = plugins(secrets, tmp_path)
    with pytest.raises(ConnectorConfigError) as admitted:
        registry.admit(config, {})
    with pytest.raises(ConnectorConfigError) as started:
        registry.validated(config)
    for caught in (admitted, started):
        assert placeholder in str(caught.value)
        assert SECRET not in str(caught.value)


def test_other_connectors_outputs_are_compared_resolved(secrets: Path, tmp_path: Path) -> None:
    mine = generator(str(tmp_path / "out" / "mine"))
    other = generator(f"${{dir:{secrets}:out}}")
    with pytest.raises(ConnectorConfigError, match="connector other"):
        plugins(secrets, tmp_path).admit(mine, {"other": other})


def test_an_unknown_class_is_a_users_error(secrets: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no installed plugin") as caught:
        plugins(secrets, tmp_path).admit(generator("out", **{"connector.class": "this.Zen"}), {})
    assert not isinstance(caught.value, UnknownPluginError)


WORKER_SERVERS = "broker-0.kafka:9092,broker-1.kafka:9092"


def secured_plugins(tmp_path: Path, jaas: str) -> RegistryPlugins:
    return RegistryPlugins(
        default_registry(),
        providers=ConfigProviders.from_worker_settings({}, {}),
        checkpoint_root=tmp_path / "checkpoints",
        tasks_max_limit=1000,
        spark=no_spark,
        cwd=tmp_path,
        kafka_security={
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "producer.sasl.jaas.config": jaas,
            "consumer.sasl.jaas.config": "not for a source connector",
        },
        kafka_bootstrap_servers=WORKER_SERVERS,
    )


def test_the_workers_kafka_login_reaches_plugins_but_never_the_config_topic(
    tmp_path: Path,
) -> None:
    module = "org.apache.kafka.common.security.plain.PlainLoginModule"
    jaas = f'{module} required username="w" password="s";'
    plugins = secured_plugins(tmp_path, jaas)
    config = generator(
        str(tmp_path / "out"),
        **{
            "tasks.max": "2",
            "kafka.sasl.mechanism": "SCRAM-SHA-256",
            "kafka.bootstrap.servers": "BROKER-1.kafka:9092",
        },
    )
    resolved = plugins.resolve(config)
    assert resolved["kafka.security.protocol"] == "SASL_SSL"
    assert resolved["kafka.sasl.jaas.config"] == jaas, "a source connector inherits producer.*"
    assert resolved["kafka.sasl.mechanism"] == "SCRAM-SHA-256", "its own setting wins"
    for stored in plugins.task_configs(config):
        assert "kafka.security.protocol" not in stored
        assert "kafka.sasl.jaas.config" not in stored
        assert stored["kafka.sasl.mechanism"] == "SCRAM-SHA-256"


@pytest.mark.parametrize(
    "servers", ["127.0.0.1:9999", "broker-0.kafka:9092,evil.example:9092", "broker-0.kafka:9093"]
)
def test_a_connector_of_another_cluster_never_gets_the_workers_login(
    tmp_path: Path, servers: str
) -> None:
    """A caller once named a broker of its own and received the worker's SASL password
    in `SaslAuthenticate`: only the brokers the worker bootstraps from get its login."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="s";'
    plugins = secured_plugins(tmp_path, jaas)
    config = generator(str(tmp_path / "out"), **{"kafka.bootstrap.servers": servers})
    assert not any(key.startswith("kafka.s") for key in plugins.resolve(config))
    own = {**config, "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN"}
    own["kafka.sasl.jaas.config"] = jaas.replace('"s"', '"its own"')
    assert plugins.resolve(own)["kafka.sasl.jaas.config"] == own["kafka.sasl.jaas.config"]
    for stored in plugins.task_configs(config):
        assert jaas not in stored.values()
