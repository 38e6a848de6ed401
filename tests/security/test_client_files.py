"""Files a connector names for its clients to read (TLS keys, certificates, trust stores)
are held to `connector.allowed.paths` like any location it reads: a caller cannot present
a key file outside it (another team's, the worker's own) as a connector's client identity.
Pure: the checks admission and a task's start make."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.plugins import plugins_for
from worker.admission.connector_configs import RegistryPlugins
from worker.connectors import default_registry
from worker.plugins.api import ConnectorConfigError

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
SERVERS = "127.0.0.1:9093"


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    root = tmp_path / "allowed"
    root.mkdir()
    (root / "client.pem").write_text(PEM)
    return root


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """Another team's files, or the worker's own: readable by the worker's user."""
    root = tmp_path / "elsewhere"
    root.mkdir()
    (root / "client.pem").write_text(PEM)
    return root


@pytest.fixture
def plugins(tmp_path: Path, allowed: Path, elsewhere: Path) -> RegistryPlugins:
    return plugins_for(
        default_registry(),
        tmp_path / "checkpoints",
        cwd=tmp_path,
        allowed_paths=[str(allowed)],
        kafka_security={
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(elsewhere / "client.pem"),
        },
        kafka_bootstrap_servers=SERVERS,
    )


def files_sink(allowed: Path, **settings: str) -> dict[str, str]:
    return {
        "name": "sink",
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": SERVERS,
        "topics": "orders",
        "output.path": str(allowed / "out"),
        **settings,
    }


def jdbc_sink(url: str) -> dict[str, str]:
    return {
        "name": "jdbc",
        "connector.class": "kafka-to-jdbc",
        "kafka.bootstrap.servers": SERVERS,
        "connection.url": url,
        "topics": "orders",
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "value.schema": "id LONG",
    }


def starts(plugins: RegistryPlugins, config: dict[str, str]) -> None:
    """Passes the checks a task's start makes (admission's would go on to ask Spark)."""
    resolved, validated = plugins.validated(config)
    plugins.placed(type(validated.connector), config, resolved)


def refused(plugins: RegistryPlugins, config: dict[str, str]) -> dict[str, str]:
    with pytest.raises(ConnectorConfigError) as error:
        plugins.admit(config, {})
    return {problem.key: problem.message for problem in error.value.problems}


def kafka_tls(store: Path) -> dict[str, str]:
    return {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.keystore.type": "PEM",
        "kafka.ssl.keystore.location": str(store),
    }


def test_a_kafka_key_file_outside_the_allowed_paths_is_refused(
    plugins: RegistryPlugins, allowed: Path, elsewhere: Path
) -> None:
    problems = refused(plugins, files_sink(allowed, **kafka_tls(elsewhere / "client.pem")))
    assert list(problems) == ["kafka.ssl.keystore.location"]
    assert "connector.allowed.paths" in problems["kafka.ssl.keystore.location"]
    starts(plugins, files_sink(allowed, **kafka_tls(allowed / "client.pem")))


def test_the_workers_own_login_files_are_inherited_not_judged(
    plugins: RegistryPlugins, allowed: Path
) -> None:
    """The worker's truststore lies outside the connectors' roots; a connector of the
    worker's cluster inherits it, which is the worker's doing, not the caller's."""
    config = files_sink(allowed)
    assert plugins.resolve(config)["kafka.ssl.truststore.location"]
    starts(plugins, config)


@pytest.mark.parametrize("parameter", ["sslcert", "sslkey", "sslrootcert"])
def test_a_database_urls_tls_files_outside_the_allowed_paths_are_refused(
    plugins: RegistryPlugins, allowed: Path, elsewhere: Path, parameter: str
) -> None:
    inside = {"sslcert": allowed / "client.pem", "sslkey": allowed / "client.pem"}
    files = {**inside, parameter: elsewhere / "client.pem"}
    if parameter != "sslrootcert":
        files.pop("sslrootcert", None)
    query = "&".join(f"{name}={path}" for name, path in files.items())
    problems = refused(plugins, jdbc_sink(f"jdbc:postgresql://127.0.0.1:5432/shop?{query}"))
    assert list(problems) == ["connection.url"]
    assert "connector.allowed.paths" in problems["connection.url"]


def test_the_system_trust_store_is_no_file(plugins: RegistryPlugins, allowed: Path) -> None:
    url = "jdbc:postgresql://127.0.0.1:5432/shop?sslmode=verify-full&sslrootcert=system"
    starts(plugins, jdbc_sink(url))


def test_a_task_whose_stored_config_names_such_a_file_fails_its_start(
    plugins: RegistryPlugins, allowed: Path, elsewhere: Path
) -> None:
    """A config stored before the rule, or the roots narrowed since."""
    config = files_sink(allowed, **kafka_tls(elsewhere / "client.pem"))
    resolved, validated = plugins.validated(config)
    with pytest.raises(ConnectorConfigError, match=r"kafka\.ssl\.keystore\.location"):
        plugins.placed(type(validated.connector), config, resolved)


def test_the_iceberg_catalogs_url_is_held_to_the_same_rule(
    plugins: RegistryPlugins, allowed: Path, elsewhere: Path
) -> None:
    config = {
        "name": "lake",
        "connector.class": "kafka-to-iceberg",
        "kafka.bootstrap.servers": SERVERS,
        "topics": "orders",
        "iceberg.tables": "shop.orders",
        "iceberg.catalog.type": "jdbc",
        "iceberg.catalog.uri": "jdbc:postgresql://127.0.0.1:5432/lake?sslmode=verify-full"
        f"&sslrootcert={elsewhere / 'client.pem'}",
        "iceberg.catalog.warehouse": str(allowed / "lake"),
    }
    assert list(refused(plugins, config)) == ["iceberg.catalog.uri"]
