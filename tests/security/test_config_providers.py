"""Config providers: what a placeholder may read, and what an error may say (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from worker.config import ConfigError, WorkerConfig
from worker.config.providers import ConfigProviderError, ConfigProviders, has_placeholder

SECRET = "p@ss-never-printed"
CONNECT = "org.apache.kafka.common.config.provider."


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    directory = tmp_path / "secrets"
    directory.mkdir()
    (directory / "db.properties").write_text(f"password={SECRET}\nuser=app\n")
    (directory / "token").write_text(SECRET)
    (tmp_path / "outside.properties").write_text(f"password={SECRET}\n")
    (tmp_path / "outside").write_text(SECRET)
    (directory / "escape").symlink_to(tmp_path / "outside")
    return directory


def providers(
    secrets: Path, env: Mapping[str, str] | None = None, **params: str
) -> ConfigProviders:
    settings = {
        "config.providers": "file,dir,env",
        "config.providers.file.class": f"{CONNECT}FileConfigProvider",
        "config.providers.file.param.allowed.paths": str(secrets),
        "config.providers.dir.class": "directory",
        "config.providers.dir.param.allowed.paths": str(secrets),
        "config.providers.env.class": "env",
        "config.providers.env.param.allowlist.pattern": "APP_.*",
        **params,
    }
    return ConfigProviders.from_worker_settings(settings, env or {"APP_USER": "svc"})


def test_each_provider_resolves_and_text_around_placeholders_stays(secrets: Path) -> None:
    config = {
        "jaas": f"user=${{file:{secrets}/db.properties:user}} pass=${{dir:{secrets}:token}}",
        "who": "${env:APP_USER}",
        "plain": "no placeholder: $ { }",
    }
    assert providers(secrets).resolve(config) == {
        "jaas": f"user=app pass={SECRET}",
        "who": "svc",
        "plain": "no placeholder: $ { }",
    }


def test_a_rotated_file_is_read_again(secrets: Path) -> None:
    resolver = providers(secrets)
    config = {"token": f"${{dir:{secrets}:token}}"}
    assert resolver.resolve(config) == {"token": SECRET}
    (secrets / "token").write_text("rotated")
    assert resolver.resolve(config) == {"token": "rotated"}


@pytest.mark.parametrize(
    "placeholder",
    [
        "${file:{outside}/outside.properties:password}",
        "${file:{secrets}/../outside.properties:password}",
        "${dir:{secrets}:escape}",
        "${dir:{secrets}:../outside}",
        "${dir:{outside}:outside}",
        "${file:{secrets}/db.properties:missing}",
        "${file:{secrets}/nothing.properties:password}",
        "${env:PATH}",
        "${env:APP_MISSING}",
        "${env:/x:APP_USER}",
        "${vault:secret/db:password}",
    ],
)
def test_what_cannot_be_resolved_names_the_key_never_a_value(
    secrets: Path, placeholder: str
) -> None:
    value = placeholder.replace("{secrets}", str(secrets)).replace("{outside}", str(secrets.parent))
    with pytest.raises(ConfigProviderError) as caught:
        providers(secrets, {"APP_USER": "svc", "PATH": SECRET}).resolve({"db.password": value})
    message = str(caught.value)
    assert message.startswith("db.password: cannot resolve ")
    assert value in message
    assert SECRET not in message


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"config.providers": "x"}, "config.providers.x.class is required"),
        (
            {"config.providers": "x", "config.providers.x.class": "os.system"},
            "not a known provider",
        ),
        ({"config.providers.y.class": "env"}, "does not list"),
        (
            {
                "config.providers": "f",
                "config.providers.f.class": "file",
                "config.providers.f.param.allowed.paths": "relative/dir",
            },
            "absolute",
        ),
        (
            {
                "config.providers": "e",
                "config.providers.e.class": "env",
                "config.providers.e.param.allowlist.pattern": "(",
            },
            "regular expression",
        ),
        ({"config.providers": "e", "config.providers.e.clas": "env"}, "unknown key"),
    ],
)
def test_bad_provider_settings_stop_the_worker_with_one_line(
    settings: dict[str, str], problem: str
) -> None:
    with pytest.raises(ConfigProviderError, match=problem):
        ConfigProviders.from_worker_settings(settings, {})
    with pytest.raises(ConfigError, match=problem):
        WorkerConfig.from_mapping(settings)


def test_without_providers_every_placeholder_is_an_error() -> None:
    with pytest.raises(ConfigProviderError, match="configured: none"):
        ConfigProviders.from_worker_settings({}, {"X": "1"}).resolve({"k": "${env:X}"})
    config = WorkerConfig.from_mapping({})
    assert config.config_provider_settings == {}


def test_worker_config_collects_provider_keys(secrets: Path) -> None:
    config = WorkerConfig.from_mapping(
        {
            "config.providers": "dir",
            "config.providers.dir.class": f"{CONNECT}DirectoryConfigProvider",
            "config.providers.dir.param.allowed.paths": str(secrets),
        }
    )
    assert config.config_provider_settings["config.providers"] == "dir"


def test_placeholders_are_recognised_as_connect_writes_them() -> None:
    assert has_placeholder("${file:/a/b.properties:key}")
    assert has_placeholder("x ${env:NAME} y")
    assert not has_placeholder("${no-colon}")
    assert not has_placeholder("$env:NAME")


@pytest.mark.parametrize(
    ("alias", "connect_class", "placeholder", "value"),
    [
        ("f", "FileConfigProvider", "${f:SECRETS/db.properties:user}", "app"),
        ("d", "DirectoryConfigProvider", "${d:SECRETS:token}", SECRET),
        ("e", "EnvVarConfigProvider", "${e:APP_USER}", "svc"),
    ],
)
def test_connects_provider_class_names_are_the_built_ins(
    secrets: Path, alias: str, connect_class: str, placeholder: str, value: str
) -> None:
    """A worker config written for Kafka Connect works unchanged."""
    resolver = ConfigProviders.from_worker_settings(
        {
            "config.providers": alias,
            f"config.providers.{alias}.class": f"{CONNECT}{connect_class}",
            f"config.providers.{alias}.param.allowed.paths": str(secrets),
        },
        {"APP_USER": "svc"},
    )
    assert resolver.resolve({"k": placeholder.replace("SECRETS", str(secrets))}) == {"k": value}


def test_the_env_provider_never_reads_the_workers_own_settings() -> None:
    """Without an allow-list, `${env:SPARKHERD_SASL_JAAS_CONFIG}` once handed a connector
    the worker's own Kafka login."""
    env = {"SPARKHERD_SASL_JAAS_CONFIG": SECRET, "APP_USER": "svc"}
    open_env = ConfigProviders.from_worker_settings(
        {"config.providers": "env", "config.providers.env.class": "env"}, env
    )
    with pytest.raises(ConfigProviderError, match="setting of the worker") as refused:
        open_env.resolve({"kafka.sasl.jaas.config": "${env:SPARKHERD_SASL_JAAS_CONFIG}"})
    assert SECRET not in str(refused.value)
    assert open_env.resolve({"user": "${env:APP_USER}"}) == {"user": "svc"}
