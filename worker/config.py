"""The worker configuration: Kafka Connect's key names, validated once at start-up.

A worker that starts with a mistyped key or a bad value would misbehave much later and far
from the cause (an unreachable broker, a rebalance storm), so every problem is turned into
one `ConfigError` line naming the key before anything starts.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from worker.config_providers import ConfigProviderError, ConfigProviders, is_provider_key
from worker.kafka_security import (
    ROLES,
    ClientRole,
    KafkaClientSecurity,
    KafkaSecurityError,
    client_security,
    is_security_key,
    security_settings,
)
from worker.properties import PropertiesSyntaxError, parse_properties

__all__ = [
    "CONNECT_COMPAT_IGNORED_KEYS",
    "ENV_PREFIX",
    "ConfigError",
    "WorkerConfig",
    "load_worker_config",
    "parse_properties",
]

ENV_PREFIX = "SPARKHERD_"

CONNECT_COMPAT_IGNORED_KEYS = frozenset(
    {
        "key.converter",
        "value.converter",
        "key.converter.schemas.enable",
        "value.converter.schemas.enable",
        "internal.key.converter",
        "internal.value.converter",
        "internal.key.converter.schemas.enable",
        "internal.value.converter.schemas.enable",
        "plugin.path",
        "offset.flush.interval.ms",
        "config.storage.replication.factor",
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
        "offset.storage.partitions",
        "status.storage.partitions",
        "rest.advertised.listener",
    }
)
"""Keys found in typical Kafka Connect worker files that sparkherd has no use for.

They are accepted so an existing `connect-distributed.properties` works as is; the caller
logs them (see `WorkerConfig.ignored_keys`). Any other unknown key is an error.
"""

DEFAULT_GROUP_ID = "sparkherd"
DEFAULT_REST_HOST = "127.0.0.1"
DEFAULT_REST_PORT = 8083
DEFAULT_SPARK_MASTER = "local[*]"
DEFAULT_CHECKPOINT_ROOT = "./.sparkherd/checkpoints"

_JAVA_INT_MAX = 2**31 - 1
_WILDCARD_HOSTS = frozenset({"0.0.0.0", "::"})
_SPARK_PREFIX = "spark."
_CUSTOM_ERROR = "sparkherd_config"
_HOSTNAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_KAFKA_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_DECIMAL_INT = re.compile(r"[+-]?[0-9]+")
_LISTENER = re.compile(
    r"(?P<scheme>https?)://(?:\[(?P<ipv6>[^\]]+)\]|(?P<host>[^:\[\]]*)):(?P<port>[0-9]+)",
    re.IGNORECASE,
)
_BOOTSTRAP_ENTRY = re.compile(r"(?:\[(?P<ipv6>[^\]]+)\]|(?P<host>[^:\[\]]+)):(?P<port>[0-9]+)")


class ConfigError(ValueError):
    """A configuration problem, rendered as the single line printed at start-up."""

    def __init__(self, problem: str, key: str | None = None, hints: Sequence[str] = ()) -> None:
        self.problem = problem
        self.key = key
        self.hints = tuple(hints)
        suffix = f" ({'; '.join(self.hints)})" if self.hints else ""
        super().__init__(f"invalid config: {problem}{suffix}")

    def with_origin(self, origin: str) -> ConfigError:
        """The same problem, saying first where the offending value came from."""
        return ConfigError(self.problem, self.key, (f"from {origin}", *self.hints))


def _invalid(problem: str, key: str, hints: Sequence[str] = ()) -> PydanticCustomError:
    """Carry a finished message through pydantic; `{message}` keeps braces in it literal."""
    return PydanticCustomError(
        _CUSTOM_ERROR, "{message}", {"message": problem, "key": key, "hints": tuple(hints)}
    )


def _parse_int(value: object) -> object:
    """Accept decimal text only: '8083' yes, '8083.0', '8_083' or a bool no (strict int)."""
    if isinstance(value, str) and _DECIMAL_INT.fullmatch(value):
        return int(value)
    return value


def _int_field(default: int, key: str, minimum: int, maximum: int = _JAVA_INT_MAX) -> Any:
    return Field(
        default,
        alias=key,
        ge=minimum,
        le=maximum,
        strict=True,
        description=f"an integer between {minimum} and {maximum}",
    )


def _is_host(text: str) -> bool:
    if _HOSTNAME.fullmatch(text):
        return True
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _check_host(value: str) -> str:
    if not _is_host(value):
        raise ValueError(value)
    return value


def _check_bootstrap_servers(value: str) -> str:
    """Normalise to 'host:port,host:port'; blank entries are skipped as Kafka clients do."""
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    for entry in entries:
        match = _BOOTSTRAP_ENTRY.fullmatch(entry)
        if match is None or not 1 <= int(match["port"]) <= 65535:
            raise ValueError(entry)
        ipv6, host = match["ipv6"], match["host"]
        valid_host = _is_host(host) if host is not None else ":" in ipv6 and _is_host(ipv6)
        if not valid_host:
            raise ValueError(entry)
    if not entries:
        raise ValueError(value)
    return ",".join(entries)


def _check_kafka_name(value: str) -> str:
    if not _KAFKA_NAME.fullmatch(value) or value in {".", ".."}:
        raise ValueError(value)
    return value


def _normalise_protocol(value: object) -> object:
    """Kafka Connect matches protocol names case-insensitively; sessioned acts as compatible."""
    if not isinstance(value, str):
        return value
    name = value.lower()
    return "compatible" if name == "sessioned" else name


def _optional_instance_id(value: object) -> object:
    """An empty value unsets it, so `--set group.instance.id=` can undo a file entry."""
    return None if value == "" else value


def _absolute_directory(value: object) -> object:
    """Resolve against the working directory at load time, so tasks never see a relative root.

    URIs are refused rather than mangled: `Path('s3a://b/x')` would silently become
    's3a:/b/x'. Shared storage must be mounted (e.g. a read-write-many volume).
    """
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or not value or "://" in value:
        raise ValueError(value)
    return Path(value).expanduser().resolve()


_Host = Annotated[str, AfterValidator(_check_host)]
_KafkaName = Annotated[str, AfterValidator(_check_kafka_name)]
_JavaInt = Annotated[int, BeforeValidator(_parse_int)]

_KAFKA_NAME_RULE = "1 to 249 letters, digits, '.', '_' or '-'"
_DERIVED_FROM = {
    "config.storage.topic": "group.id",
    "status.storage.topic": "group.id",
    "offset.storage.topic": "group.id",
    "rest.advertised.host.name": "rest.host.name",
    "rest.advertised.port": "rest.port",
}


class WorkerConfig(BaseModel):
    """One worker's settings; attribute names are snake_case, aliases the dotted keys.

    Build it with `load_worker_config` (file, environment, --set), `from_mapping` or
    `WorkerConfig(**dotted)`; all raise `ConfigError`, never a pydantic `ValidationError`.
    Every `spark.*` key is passed to the SparkSession untouched, collected in `spark_conf`
    (with `spark.master`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: Annotated[str, AfterValidator(_check_bootstrap_servers)] = Field(
        "127.0.0.1:9092",
        alias="bootstrap.servers",
        description="a comma-separated list of host:port pairs",
    )
    group_id: str = Field(
        DEFAULT_GROUP_ID, alias="group.id", min_length=1, description="a non-empty string"
    )
    config_storage_topic: _KafkaName = Field(
        alias="config.storage.topic", description=f"a Kafka topic name of {_KAFKA_NAME_RULE}"
    )
    status_storage_topic: _KafkaName = Field(
        alias="status.storage.topic", description=f"a Kafka topic name of {_KAFKA_NAME_RULE}"
    )
    offset_storage_topic: _KafkaName = Field(
        alias="offset.storage.topic", description=f"a Kafka topic name of {_KAFKA_NAME_RULE}"
    )
    rest_host_name: _Host = Field(
        DEFAULT_REST_HOST, alias="rest.host.name", description="a host name or IP address"
    )
    rest_port: _JavaInt = _int_field(DEFAULT_REST_PORT, "rest.port", 1, 65535)
    rest_advertised_host_name: _Host = Field(
        alias="rest.advertised.host.name", description="a host name or IP address"
    )
    rest_advertised_port: _JavaInt = _int_field(DEFAULT_REST_PORT, "rest.advertised.port", 1, 65535)
    connect_protocol: Annotated[
        Literal["eager", "compatible"], BeforeValidator(_normalise_protocol)
    ] = Field(
        "compatible",
        alias="connect.protocol",
        description="one of 'eager', 'compatible' or 'sessioned'",
    )
    scheduled_rebalance_max_delay_ms: _JavaInt = _int_field(
        300_000, "scheduled.rebalance.max.delay.ms", 0
    )
    session_timeout_ms: _JavaInt = _int_field(10_000, "session.timeout.ms", 1)
    heartbeat_interval_ms: _JavaInt = _int_field(3_000, "heartbeat.interval.ms", 1)
    rebalance_timeout_ms: _JavaInt = _int_field(60_000, "rebalance.timeout.ms", 1)
    group_instance_id: Annotated[_KafkaName | None, BeforeValidator(_optional_instance_id)] = Field(
        None,
        alias="group.instance.id",
        description=f"empty or {_KAFKA_NAME_RULE}",
    )
    checkpoint_root: Annotated[Path, BeforeValidator(_absolute_directory)] = Field(
        Path(DEFAULT_CHECKPOINT_ROOT),
        alias="checkpoint.root",
        validate_default=True,
        description="a local directory path, not a URI",
    )
    task_shutdown_graceful_timeout_ms: _JavaInt = _int_field(
        5_000, "task.shutdown.graceful.timeout.ms", 0
    )
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
    tasks_max_limit: _JavaInt = _int_field(1000, "tasks.max.limit", 1)
    kafka_jvm_connector: Literal["maven", "none"] = Field(
        "maven",
        alias="kafka.jvm.connector",
        description="'maven' (Spark's Kafka connector from Maven Central) or 'none'",
    )
    spark_conf: dict[str, str] = Field(
        default_factory=lambda: {"spark.master": DEFAULT_SPARK_MASTER}
    )
    config_provider_settings: dict[str, str] = Field(default_factory=dict)
    """`config.providers` and every `config.providers.<alias>.*` key, as given."""
    kafka_security_settings: dict[str, str] = Field(default_factory=dict)
    """`security.protocol`, `sasl.*`, `ssl.*` and their `consumer.`/`producer.`/`admin.`
    forms, as given (see `worker.kafka_security`)."""

    _given: dict[str, object] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _from_dotted_keys(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Reject unknown keys first, fill derived defaults, and remember what was given."""
        if not isinstance(data, Mapping):
            return handler(data)
        config = handler(_with_derived_defaults(data))
        config._given = dict(data)
        return config

    @model_validator(mode="after")
    def _check_relations(self) -> Self:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise _invalid(
                "'heartbeat.interval.ms' must be less than 'session.timeout.ms' "
                f"(got {self.heartbeat_interval_ms} >= {self.session_timeout_ms})",
                "heartbeat.interval.ms",
            )
        self._check_rest_auth()
        self._check_tls()
        for role in (None, *ROLES):
            try:
                self.kafka_security(role)
            except KafkaSecurityError as exc:
                raise _invalid(str(exc), exc.key) from None
        try:
            ConfigProviders.from_worker_settings(self.config_provider_settings, {})
        except ConfigProviderError as exc:
            raise _invalid(str(exc), "config.providers") from None
        topics = [
            ("config.storage.topic", self.config_storage_topic),
            ("status.storage.topic", self.status_storage_topic),
            ("offset.storage.topic", self.offset_storage_topic),
        ]
        for index, (key, topic) in enumerate(topics):
            for earlier_key, earlier_topic in topics[:index]:
                if topic == earlier_topic:
                    raise _invalid(
                        f"'{key}' must differ from '{earlier_key}' (both are '{topic}')", key
                    )
        return self

    def _check_tls(self) -> None:
        if self.rest_scheme == "http":
            return
        for key, path in (
            ("listeners.https.ssl.certfile", self.listeners_https_ssl_certfile),
            ("listeners.https.ssl.keyfile", self.listeners_https_ssl_keyfile),
            ("listeners.https.ssl.cafile", self.listeners_https_ssl_cafile),
        ):
            if path is None and key != "listeners.https.ssl.cafile":
                raise _invalid(f"an https listener needs '{key}'", key)
            if path is not None and not path.is_file():
                raise _invalid(f"'{key}' must be a readable file (got '{path}')", key)

    def _check_rest_auth(self) -> None:
        """Credentials are read and checked at start-up, so a typo in the file stops the
        worker with one line instead of locking every client out later."""
        given = [
            key
            for key, value in (
                ("rest.auth.credentials", self.rest_auth_credentials),
                ("rest.auth.credentials.file", self.rest_auth_credentials_file),
            )
            if value is not None
        ]
        if self.rest_auth == "none":
            return
        if len(given) != 1:
            raise _invalid(
                f"'rest.auth={self.rest_auth}' needs exactly one of 'rest.auth.credentials' "
                f"and 'rest.auth.credentials.file' (got {len(given)})",
                "rest.auth",
            )
        entries = self.rest_credentials
        if not entries:
            raise _invalid(f"'{given[0]}' holds no credentials", given[0])
        if self.rest_auth == "basic":
            for number, entry in enumerate(entries, start=1):
                if not entry.partition(":")[0] or ":" not in entry:
                    raise _invalid(
                        f"'{given[0]}' entry {number} must be user:password",
                        given[0],
                    )

    @property
    def rest_credentials(self) -> tuple[str, ...]:
        """The accepted `user:password` pairs or tokens; empty when `rest.auth=none`."""
        if self.rest_auth_credentials is not None:
            return _entries(self.rest_auth_credentials.get_secret_value().split(","))
        if self.rest_auth_credentials_file is None or self.rest_auth == "none":
            return ()
        path = self.rest_auth_credentials_file
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _invalid(
                f"'rest.auth.credentials.file' cannot be read ({path}): {exc}",
                "rest.auth.credentials.file",
            ) from None
        return _entries(text.splitlines())

    def __init__(self, **values: object) -> None:
        """Keywords are the dotted keys, e.g. `WorkerConfig(**{"rest.port": 9000})`."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _to_config_error(exc.errors()[0], values) from None

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> WorkerConfig:
        """Validate dotted keys (and `spark.*`) into a config, raising only `ConfigError`."""
        return cls(**values)

    def with_overrides(self, **dotted_or_snake: str | int) -> WorkerConfig:
        """A copy as if more `--set` flags were given; derived defaults are derived again."""
        by_name = {name: field.alias for name, field in type(self).model_fields.items()}
        overrides = {by_name.get(key) or key: str(value) for key, value in dotted_or_snake.items()}
        return self.from_mapping({**self._given, **overrides})

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


def _entries(lines: Sequence[str]) -> tuple[str, ...]:
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


_FIELDS_BY_KEY = {field.alias: field for field in WorkerConfig.model_fields.values() if field.alias}


def _with_derived_defaults(data: Mapping[str, object]) -> dict[str, object]:
    """Split off `spark.*` and ignored keys, then fill defaults that follow other keys."""
    values: dict[str, object] = {}
    spark_conf = {"spark.master": DEFAULT_SPARK_MASTER}
    provider_settings: dict[str, str] = {}
    security: dict[str, str] = {}
    for key, raw in data.items():
        value = raw.strip() if isinstance(raw, str) else raw
        if key in _FIELDS_BY_KEY:
            values[key] = value
        elif (
            (key.startswith(_SPARK_PREFIX) and len(key) > len(_SPARK_PREFIX))
            or is_provider_key(key)
            or is_security_key(key)
        ):
            if not isinstance(value, str):
                raise _invalid(f"'{key}' must be a string (got {value!r})", key)
            if is_provider_key(key):
                provider_settings[key] = value
            elif is_security_key(key):
                security[key] = value
            else:
                spark_conf[key] = value
        elif key not in CONNECT_COMPAT_IGNORED_KEYS:
            raise _invalid(f"unknown key '{key}'", key, _did_you_mean(key))
    if not spark_conf["spark.master"]:
        raise _invalid(
            "'spark.master' must be a Spark master URL such as local[*] (got '')", "spark.master"
        )
    values.update(_listener_address(values.get("listeners")))
    group_id = values.get("group.id", DEFAULT_GROUP_ID)
    values.setdefault("config.storage.topic", f"{group_id}-configs")
    values.setdefault("status.storage.topic", f"{group_id}-status")
    values.setdefault("offset.storage.topic", f"{group_id}-offsets")
    rest_host = values.get("rest.host.name", DEFAULT_REST_HOST)
    advertised_host = socket.gethostname() if rest_host in _WILDCARD_HOSTS else rest_host
    values.setdefault("rest.advertised.host.name", advertised_host)
    values.setdefault("rest.advertised.port", values.get("rest.port", DEFAULT_REST_PORT))
    values["spark_conf"] = spark_conf
    values["config_provider_settings"] = provider_settings
    values["kafka_security_settings"] = security
    return values


def _listener_address(listeners: object) -> dict[str, object]:
    """`rest.host.name` and `rest.port` from `listeners`, which wins over them as in
    Kafka Connect; an empty host means every interface. One listener only."""
    if listeners is None or listeners == "":
        return {}
    match = _LISTENER.fullmatch(str(listeners))
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise _invalid(
            "'listeners' must be one URL, http://host:port or https://host:port "
            f"(got {listeners!r})",
            "listeners",
        )
    host = match["ipv6"] or match["host"] or "0.0.0.0"
    return {"rest.host.name": host, "rest.port": match["port"]}


def _did_you_mean(key: str) -> list[str]:
    known = [*_FIELDS_BY_KEY, "spark.master"]
    return [f"did you mean '{match}'?" for match in difflib.get_close_matches(key, known, n=1)]


def _to_config_error(error: ErrorDetails, given: Mapping[str, object]) -> ConfigError:
    if error["type"] == _CUSTOM_ERROR:
        context = error.get("ctx", {})
        return ConfigError(error["msg"], context.get("key"), context.get("hints", ()))
    key = str(error["loc"][0])
    field = _FIELDS_BY_KEY[key]
    shown = given.get(key, error["input"])
    hints = (
        [f"derived from '{_DERIVED_FROM[key]}'"]
        if key not in given and key in _DERIVED_FROM
        else []
    )
    return ConfigError(f"'{key}' must be {field.description} (got {shown!r})", key, hints)


def load_worker_config(
    config_file: Path | None, env: Mapping[str, str], overrides: Sequence[str]
) -> WorkerConfig:
    """Merge the sources, later winning: properties file, `SPARKHERD_*` variables, `--set`.

    An environment variable maps to a key by dropping the prefix, lower-casing and turning
    underscores into dots (`SPARKHERD_SPARK_EXECUTOR_MEMORY` -> `spark.executor.memory`).
    That cannot express camelCase Spark keys such as
    `spark.sql.adaptive.coalescePartitions.enabled`: give those in the file or with --set.
    Only `env` is read (never `os.environ`), so callers and tests control it fully.
    """
    values: dict[str, str] = {}
    origins: dict[str, str] = {}
    sources = [
        _file_entries(config_file) if config_file is not None else [],
        _env_entries(env),
        _set_entries(overrides),
    ]
    for entries in sources:
        for key, value, origin in entries:
            values[key] = value
            origins[key] = origin
    try:
        return WorkerConfig.from_mapping(values)
    except ConfigError as exc:
        if exc.key in origins:
            raise exc.with_origin(origins[exc.key]) from None
        raise


def _file_entries(path: Path) -> list[tuple[str, str, str]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"cannot read config file '{path}': {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file '{path}' is not UTF-8 text") from None
    try:
        entries = parse_properties(text)
    except PropertiesSyntaxError as exc:
        raise ConfigError(f"config file '{path}' {exc}") from None
    return [(key, value, str(path)) for key, value in entries.items()]


def _env_entries(env: Mapping[str, str]) -> list[tuple[str, str, str]]:
    return [
        (name[len(ENV_PREFIX) :].lower().replace("_", "."), value, f"environment variable {name}")
        for name, value in sorted(env.items())
        if name.startswith(ENV_PREFIX)
    ]


def _set_entries(overrides: Sequence[str]) -> list[tuple[str, str, str]]:
    entries = []
    for override in overrides:
        key, separator, value = override.partition("=")
        if not separator or not key.strip():
            raise ConfigError(f"malformed --set '{override}': expected key=value")
        entries.append((key.strip(), value, "--set"))
    return entries
