"""`WorkerConfig`: one worker's settings under Kafka Connect's key names, checked as a whole.

The model owns the keys: which exist, their types (`worker.plugins.config_values`), their
defaults (`worker.config.defaults`) and the relations between them. Kafka Connect keys
sparkherd has no use for are accepted and reported, so an existing
`connect-distributed.properties` works as is; any other unknown key is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from worker.config.defaults import (
    DEFAULT_CHECKPOINT_ROOT,
    DEFAULT_DATA_DIR,
    DEFAULT_GROUP_ID,
    DEFAULT_REST_HOST,
    DEFAULT_REST_PORT,
    DEFAULT_SPARK_MASTER,
    DERIVED_FROM,
)
from worker.config.errors import CUSTOM_ERROR, ConfigError, invalid, with_origin
from worker.config.given_keys import CONNECT_COMPAT_IGNORED_KEYS, sorted_input
from worker.config.providers import ConfigProviderError, ConfigProviders
from worker.kafka.security import (
    ROLES,
    ClientRole,
    KafkaClientSecurity,
    KafkaSecurityError,
    client_security,
    security_settings,
)
from worker.plugins.auto_restart_settings import MIN_BACKOFF_MS
from worker.plugins.config_values import (
    KAFKA_NAME_RULE,
    AbsoluteDirectory,
    BootstrapServers,
    ConnectProtocol,
    Host,
    JavaInt,
    KafkaName,
    LocationRoots,
    Names,
    OptionalKafkaName,
    int_field,
)
from worker.plugins.jvm_packages import JvmChoice, default_choices
from worker.plugins.start_deadline import START_TIMEOUT_KEY, START_TIMEOUT_MS_DEFAULT
from worker.records.converters.spec import worker_converter_problems


class WorkerConfig(BaseModel):
    """One worker's settings; attribute names are snake_case, aliases the dotted keys.

    Build it with `load_worker_config` (file, environment, --set), `from_mapping` or
    `WorkerConfig(**dotted)`; all raise `ConfigError`, never a pydantic `ValidationError`.
    Every `spark.*` key is passed to the SparkSession untouched, collected in `spark_conf`
    (with `spark.master`). The REST server's TLS and authentication keys are held here as
    given; the REST layer reads and checks them once at start-up (`rest.security`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: BootstrapServers = Field(
        "127.0.0.1:9092",
        alias="bootstrap.servers",
        description="a comma-separated list of host:port pairs",
    )
    group_id: str = Field(
        DEFAULT_GROUP_ID, alias="group.id", min_length=1, description="a non-empty string"
    )
    config_storage_topic: KafkaName = Field(
        alias="config.storage.topic", description=f"a Kafka topic name of {KAFKA_NAME_RULE}"
    )
    status_storage_topic: KafkaName = Field(
        alias="status.storage.topic", description=f"a Kafka topic name of {KAFKA_NAME_RULE}"
    )
    offset_storage_topic: KafkaName = Field(
        alias="offset.storage.topic", description=f"a Kafka topic name of {KAFKA_NAME_RULE}"
    )
    rest_host_name: Host = Field(
        DEFAULT_REST_HOST, alias="rest.host.name", description="a host name or IP address"
    )
    rest_port: JavaInt = int_field(DEFAULT_REST_PORT, "rest.port", 1, 65535)
    rest_advertised_host_name: Host = Field(
        alias="rest.advertised.host.name", description="a host name or IP address"
    )
    rest_advertised_port: JavaInt = int_field(DEFAULT_REST_PORT, "rest.advertised.port", 1, 65535)
    connect_protocol: ConnectProtocol = Field(
        "compatible",
        alias="connect.protocol",
        description="one of 'eager', 'compatible' or 'sessioned'",
    )
    scheduled_rebalance_max_delay_ms: JavaInt = int_field(
        300_000, "scheduled.rebalance.max.delay.ms", 0
    )
    session_timeout_ms: JavaInt = int_field(10_000, "session.timeout.ms", 1)
    heartbeat_interval_ms: JavaInt = int_field(3_000, "heartbeat.interval.ms", 1)
    rebalance_timeout_ms: JavaInt = int_field(60_000, "rebalance.timeout.ms", 1)
    group_instance_id: OptionalKafkaName = Field(
        None,
        alias="group.instance.id",
        description=f"empty or {KAFKA_NAME_RULE}",
    )
    checkpoint_root: AbsoluteDirectory = Field(
        Path(DEFAULT_CHECKPOINT_ROOT),
        alias="checkpoint.root",
        validate_default=True,
        description="a local directory path, not a URI",
    )
    data_dir: AbsoluteDirectory = Field(
        Path(DEFAULT_DATA_DIR),
        alias="data.dir",
        validate_default=True,
        description="a local directory path, not a URI",
    )
    """This worker's own directory on local disk (never the shared checkpoint root): its
    Spark temp space lives under `tmp/` (`worker.runtime.temp_space`)."""
    task_shutdown_graceful_timeout_ms: JavaInt = int_field(
        5_000, "task.shutdown.graceful.timeout.ms", 0
    )
    task_handoff_timeout_ms: JavaInt = int_field(20_000, "task.handoff.timeout.ms", 0)
    task_start_timeout_ms: JavaInt = int_field(START_TIMEOUT_MS_DEFAULT, START_TIMEOUT_KEY, 1)
    log_format: Literal["text", "json"] = Field(
        "text", alias="log.format", description="'text' or 'json'"
    )
    worker_warmup_enabled: bool = Field(
        True, alias="worker.warmup.enabled", description="'true' or 'false'"
    )
    worker_warmup_connectors: Names | None = Field(
        None,
        alias="worker.warmup.connectors",
        description="comma-separated connector classes (aliases or class names); empty: none",
    )
    """Whose writes the warm-up runs once (`Connector.warm_up`); None: every plugin's."""
    listeners: str | None = Field(
        None,
        alias="listeners",
        description="one listener URL, http://host:port or https://host:port",
    )
    listeners_https_ssl_certfile: Path | None = Field(
        None, alias="listeners.https.ssl.certfile", description="a PEM certificate file path"
    )
    listeners_https_ssl_keyfile: Path | None = Field(
        None, alias="listeners.https.ssl.keyfile", description="a PEM private key file path"
    )
    listeners_https_ssl_cafile: Path | None = Field(
        None,
        alias="listeners.https.ssl.cafile",
        description="a PEM file of the CAs that sign the other workers' certificates",
    )
    rest_auth: Literal["none", "basic", "bearer"] = Field(
        "none", alias="rest.auth", description="one of 'none', 'basic' or 'bearer'"
    )
    rest_auth_credentials: SecretStr | None = Field(
        None,
        alias="rest.auth.credentials",
        description="comma-separated user:password pairs (basic) or tokens (bearer)",
    )
    rest_auth_credentials_file: Path | None = Field(
        None,
        alias="rest.auth.credentials.file",
        description="a file path (one user:password or token per line)",
    )
    tasks_max_limit: JavaInt = int_field(1000, "tasks.max.limit", 1)
    connector_allowed_paths: LocationRoots = Field(
        (),
        alias="connector.allowed.paths",
        description="comma-separated directories or URIs without '?', '#', '~', '..', "
        "'\\' or glob characters (empty: anywhere)",
    )
    auto_restart_enabled: bool = Field(
        True, alias="auto.restart.enabled", description="'true' or 'false'"
    )
    auto_restart_max_attempts: JavaInt = int_field(5, "auto.restart.max.attempts", 1)
    auto_restart_initial_backoff_ms: JavaInt = int_field(
        5_000, "auto.restart.initial.backoff.ms", MIN_BACKOFF_MS
    )
    auto_restart_max_backoff_ms: JavaInt = int_field(
        60_000, "auto.restart.max.backoff.ms", MIN_BACKOFF_MS
    )
    topic_creation_enable: bool = Field(
        True,
        alias="topic.creation.enable",
        description="'true' or 'false'",
    )
    jvm_packages: dict[str, JvmChoice] = Field(default_factory=default_choices)
    """Each key of `JVM_PACKAGES` (`kafka.jvm.connector`, `delta.jvm.connector`, ...),
    'maven' unless given: the table, not a field per package, says which keys there are."""
    spark_conf: dict[str, str] = Field(
        default_factory=lambda: {"spark.master": DEFAULT_SPARK_MASTER}
    )
    config_provider_settings: dict[str, str] = Field(default_factory=dict)
    """`config.providers` and every `config.providers.<alias>.*` key, as given."""
    kafka_security_settings: dict[str, str] = Field(default_factory=dict)
    """`security.protocol`, `sasl.*`, `ssl.*` and their `consumer.`/`producer.`/`admin.`
    forms, as given (see `worker.kafka.security`)."""
    converter_settings: dict[str, str] = Field(default_factory=dict)
    """`key.converter`, `value.converter` and their prefixed settings, as given: the
    converters of every connector that names none (see `worker.records.converters.spec`)."""

    _given: dict[str, object] = PrivateAttr(default_factory=dict)
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _from_dotted_keys(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Reject unknown keys first, fill derived defaults, and remember what was given."""
        if not isinstance(data, Mapping):
            return handler(data)
        config = handler(sorted_input(data, _FIELDS_BY_KEY))
        config._given = dict(data)
        return config

    @model_validator(mode="after")
    def _check_relations(self) -> Self:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise invalid(
                "'heartbeat.interval.ms' must be less than 'session.timeout.ms' "
                f"(got {self.heartbeat_interval_ms} >= {self.session_timeout_ms})",
                "heartbeat.interval.ms",
            )
        if self.auto_restart_initial_backoff_ms > self.auto_restart_max_backoff_ms:
            raise invalid(
                "'auto.restart.initial.backoff.ms' must not be more than "
                "'auto.restart.max.backoff.ms' "
                f"(got {self.auto_restart_initial_backoff_ms} > "
                f"{self.auto_restart_max_backoff_ms})",
                "auto.restart.initial.backoff.ms",
            )
        for role in (None, *ROLES):
            try:
                self.kafka_security(role)
            except KafkaSecurityError as exc:
                raise invalid(str(exc), exc.key) from None
        try:
            ConfigProviders.from_worker_settings(self.config_provider_settings, {})
        except ConfigProviderError as exc:
            raise invalid(str(exc), "config.providers") from None
        for problem in worker_converter_problems(self.converter_settings):
            raise invalid(f"'{problem.key}': {problem.message}", problem.key)
        topics = [
            ("config.storage.topic", self.config_storage_topic),
            ("status.storage.topic", self.status_storage_topic),
            ("offset.storage.topic", self.offset_storage_topic),
        ]
        for index, (key, topic) in enumerate(topics):
            for earlier_key, earlier_topic in topics[:index]:
                if topic == earlier_topic:
                    raise invalid(
                        f"'{key}' must differ from '{earlier_key}' (both are '{topic}')", key
                    )
        return self

    def __init__(self, **values: object) -> None:
        """Keywords are the dotted keys, e.g. `WorkerConfig(**{"rest.port": 9000})`."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _to_config_error(exc.errors()[0], values) from None

    @classmethod
    def from_mapping(
        cls, values: Mapping[str, object], origins: Mapping[str, str] | None = None
    ) -> WorkerConfig:
        """Validate dotted keys (and `spark.*`) into a config, raising only `ConfigError`.

        `origins` says where each value came from (a file, a variable, `--set`): an error
        about a key names it, whether found now or later (`error`).
        """
        known_origins = dict(origins or {})
        try:
            config = cls(**values)
        except ConfigError as exc:
            raise with_origin(exc, known_origins) from None
        config._origins = known_origins
        return config

    def error(self, problem: str, key: str) -> ConfigError:
        """A problem with `key` that a check after loading found (the REST layer reads its
        settings at start-up), told as loading tells one: with where the value came from."""
        return with_origin(ConfigError(problem, key), self._origins)

    def with_overrides(self, **dotted_or_snake: str | int) -> WorkerConfig:
        """A copy as if more `--set` flags were given; derived defaults are derived again."""
        by_name = {name: field.alias for name, field in type(self).model_fields.items()}
        overrides = {by_name.get(key) or key: str(value) for key, value in dotted_or_snake.items()}
        origins = {**self._origins, **dict.fromkeys(overrides, "--set")}
        return self.from_mapping({**self._given, **overrides}, origins)

    @property
    def worker_id(self) -> str:
        """`<advertised host>:<advertised port>`, the id Kafka Connect gives a worker."""
        host = self.rest_advertised_host_name
        bracketed = f"[{host}]" if ":" in host else host
        return f"{bracketed}:{self.rest_advertised_port}"

    @property
    def rest_scheme(self) -> Literal["http", "https"]:
        https = self.listeners is not None and self.listeners.lower().startswith("https:")
        return "https" if https else "http"

    @property
    def rest_url(self) -> str:
        return f"{self.rest_scheme}://{self.worker_id}"

    @property
    def identity(self) -> str:
        """Stable across restarts when `group.instance.id` is set, else the REST URL."""
        return self.group_instance_id or self.rest_url

    @property
    def bootstrap_list(self) -> list[str]:
        return self.bootstrap_servers.split(",")

    def kafka_security(self, role: ClientRole | None = None) -> KafkaClientSecurity:
        """How a Kafka client authenticates: the worker's own clients (no role), or a
        connector's consumer, producer or admin client (the role's prefixed keys win)."""
        where = (
            f"{role}."
            if role and any(key.startswith(f"{role}.") for key in self.kafka_security_settings)
            else ""
        )
        return client_security(security_settings(self.kafka_security_settings, role), where)

    @property
    def ignored_keys(self) -> list[str]:
        """Kafka Connect keys that were given but have no effect here, for the caller to log."""
        return sorted(key for key in self._given if key in CONNECT_COMPAT_IGNORED_KEYS)


_FIELDS_BY_KEY = {field.alias: field for field in WorkerConfig.model_fields.values() if field.alias}


def _to_config_error(error: ErrorDetails, given: Mapping[str, object]) -> ConfigError:
    if error["type"] == CUSTOM_ERROR:
        context = error.get("ctx", {})
        return ConfigError(error["msg"], context.get("key"), context.get("hints", ()))
    key = str(error["loc"][0])
    field = _FIELDS_BY_KEY[key]
    shown = given.get(key, error["input"])
    hints = (
        [f"derived from '{DERIVED_FROM[key]}'"] if key not in given and key in DERIVED_FROM else []
    )
    return ConfigError(f"'{key}' must be {field.description} (got {shown!r})", key, hints)
