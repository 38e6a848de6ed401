"""Worker configuration: sources and precedence, defaults, validation, properties syntax."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from worker.config import ConfigError, WorkerConfig, load_worker_config
from worker.config.properties import PropertiesSyntaxError, parse_properties


def load(*overrides: str, env: dict[str, str] | None = None) -> WorkerConfig:
    return load_worker_config(None, env or {}, list(overrides))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "worker.properties"
    path.write_text(text, encoding="utf-8")
    return path


def config_error(*overrides: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load(*overrides, env=env)
    message = str(caught.value)
    assert message.startswith("invalid config: ")
    assert "\n" not in message
    return message


# --- properties syntax -------------------------------------------------------------------


def test_properties_accept_all_three_separators_and_trim_surrounding_whitespace() -> None:
    text = "a=1\n  b : 2  \nc 3\nd\t=\t4\ne:5\nf    six  seven \n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "5",
        "f": "six  seven",
    }


def test_properties_keep_separators_inside_values() -> None:
    text = "bootstrap.servers: h1:9092,h2:9092\nspark.driver.extraJavaOptions=-Da=b -Dc:d\n"
    assert parse_properties(text) == {
        "bootstrap.servers": "h1:9092,h2:9092",
        "spark.driver.extraJavaOptions": "-Da=b -Dc:d",
    }


def test_properties_skip_comments_and_blank_lines() -> None:
    text = "# comment=1\n   ! bang: 2\n\n   \t\nkey=value # not a comment\n"
    assert parse_properties(text) == {"key": "value # not a comment"}


def test_properties_key_without_value_is_empty_and_last_duplicate_wins() -> None:
    assert parse_properties("lonely\nempty=\nx=1\nx=2") == {"lonely": "", "empty": "", "x": "2"}


def test_properties_backslash_continues_a_line_and_drops_leading_indent() -> None:
    text = "bootstrap.servers=a:1,\\\n    b:2,\\\n\tc:3\nnext=1\n"
    assert parse_properties(text) == {"bootstrap.servers": "a:1,b:2,c:3", "next": "1"}


def test_properties_continuation_line_starting_with_hash_is_content() -> None:
    assert parse_properties("a=x\\\n  #y\n") == {"a": "x#y"}


def test_properties_comment_ending_in_backslash_does_not_continue() -> None:
    assert parse_properties("# note \\\na=1\n") == {"a": "1"}


def test_properties_even_backslashes_at_end_are_an_escaped_backslash() -> None:
    assert parse_properties("dir=C:\\\\\nnext=1\n") == {"dir": "C:\\", "next": "1"}


def test_properties_continuation_at_end_of_text_ends_the_entry() -> None:
    assert parse_properties("a=1\\") == {"a": "1"}


def test_properties_resolve_escapes_in_keys_and_values() -> None:
    text = "my\\=key\\ x=tab\\there\\u0041\\n\nsp=\\ padded\\ \n"
    assert parse_properties(text) == {"my=key x": "tab\thereA\n", "sp": " padded "}


def test_properties_accept_crlf_and_cr_line_endings() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_properties_reject_malformed_unicode_escape_with_its_line() -> None:
    with pytest.raises(PropertiesSyntaxError, match=r"line 3: malformed \\uXXXX"):
        parse_properties("# c\na=1\nb=\\u12G4\n")


_KEYS = st.from_regex(r"[a-z][a-z0-9.]{0,20}", fullmatch=True)
# Plain values: no backslash anywhere, and not starting with a separator (which the
# parser would consume as part of "key = value") or ending in whitespace (trimmed).
_VALUES = st.from_regex(r"([!-9;<>-\[\]-~]([ !-\[\]-~]*[!-\[\]-~])?)?", fullmatch=True)
_SEPARATORS = st.sampled_from(["=", ":", " ", " = ", "\t:\t", "  "])


@given(st.dictionaries(_KEYS, st.tuples(_VALUES, _SEPARATORS), max_size=8))
def test_properties_round_trip_plain_entries(entries: dict[str, tuple[str, str]]) -> None:
    text = "\n".join(f"  {key}{sep}{value}  " for key, (value, sep) in entries.items())
    expected = {key: value for key, (value, _) in entries.items()}
    assert parse_properties(text) == expected


# --- sources and precedence --------------------------------------------------------------


def test_file_source(tmp_path: Path) -> None:
    path = write(tmp_path, "bootstrap.servers=broker:9093\nrest.port = 9000\n")
    config = load_worker_config(path, {}, [])
    assert config.bootstrap_servers == "broker:9093"
    assert config.rest_port == 9000


def test_env_source_maps_prefixed_variables_only() -> None:
    env = {
        "SPARKHERD_BOOTSTRAP_SERVERS": " broker:9093 ",
        "SPARKHERD_SESSION_TIMEOUT_MS": "20000",
        "BOOTSTRAP_SERVERS": "ignored:1",
        "OTHER_REST_PORT": "not-a-port",
    }
    config = load(env=env)
    assert config.bootstrap_servers == "broker:9093"
    assert config.session_timeout_ms == 20000


def test_set_source_splits_at_the_first_equals_sign() -> None:
    config = load("rest.port=9001", "spark.driver.extraJavaOptions = -Da=b")
    assert config.rest_port == 9001
    assert config.spark_conf["spark.driver.extraJavaOptions"] == "-Da=b"


def test_precedence_file_then_env_then_set(tmp_path: Path) -> None:
    path = write(tmp_path, "group.id=from-file\nrest.port=9000\nsession.timeout.ms=20000\n")
    env = {"SPARKHERD_GROUP_ID": "from-env", "SPARKHERD_REST_PORT": "9001"}
    config = load_worker_config(path, env, ["group.id=from-set"])
    assert config.group_id == "from-set"
    assert config.rest_port == 9001
    assert config.session_timeout_ms == 20000


# --- defaults and derivations ------------------------------------------------------------


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load()
    assert config.bootstrap_servers == "127.0.0.1:9092"
    assert config.group_id == "sparkherd"
    assert config.config_storage_topic == "sparkherd-configs"
    assert config.status_storage_topic == "sparkherd-status"
    assert config.offset_storage_topic == "sparkherd-offsets"
    assert (config.rest_host_name, config.rest_port) == ("127.0.0.1", 8083)
    assert (config.rest_advertised_host_name, config.rest_advertised_port) == ("127.0.0.1", 8083)
    assert config.connect_protocol == "compatible"
    assert config.scheduled_rebalance_max_delay_ms == 300_000
    assert config.session_timeout_ms == 10_000
    assert config.heartbeat_interval_ms == 3_000
    assert config.rebalance_timeout_ms == 60_000
    assert config.group_instance_id is None
    assert config.checkpoint_root == (tmp_path / ".sparkherd" / "checkpoints").resolve()
    assert config.task_shutdown_graceful_timeout_ms == 5_000
    assert config.spark_conf == {"spark.master": "local[*]"}
    assert config.ignored_keys == []
    assert config == WorkerConfig()


def test_storage_topics_follow_group_id_unless_set() -> None:
    config = load("group.id=etl", "status.storage.topic=shared-status")
    assert config.config_storage_topic == "etl-configs"
    assert config.status_storage_topic == "shared-status"
    assert config.offset_storage_topic == "etl-offsets"


def test_advertised_address_follows_rest_address() -> None:
    config = load("rest.host.name=10.1.2.3", "rest.port=9100")
    assert (config.rest_advertised_host_name, config.rest_advertised_port) == ("10.1.2.3", 9100)
    assert config.worker_id == "10.1.2.3:9100"
    assert config.rest_url == "http://10.1.2.3:9100"


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::"])
def test_wildcard_rest_host_advertises_the_machine_hostname(
    wildcard: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "pod-7.workers")
    config = load(f"rest.host.name={wildcard}")
    assert config.rest_advertised_host_name == "pod-7.workers"
    assert config.worker_id == "pod-7.workers:8083"


def test_explicit_advertised_address_wins() -> None:
    config = load(
        "rest.host.name=0.0.0.0", "rest.advertised.host.name=svc", "rest.advertised.port=80"
    )
    assert config.rest_url == "http://svc:80"


def test_ipv6_advertised_host_is_bracketed_in_id_and_url() -> None:
    config = load("rest.host.name=::1")
    assert config.worker_id == "[::1]:8083"
    assert config.rest_url == "http://[::1]:8083"


def test_identity_is_group_instance_id_when_set_else_rest_url() -> None:
    assert load().identity == "http://127.0.0.1:8083"
    assert load("group.instance.id=worker-0").identity == "worker-0"


def test_empty_group_instance_id_unsets_a_file_value(tmp_path: Path) -> None:
    path = write(tmp_path, "group.instance.id=worker-0\n")
    assert load_worker_config(path, {}, ["group.instance.id="]).group_instance_id is None


def test_relative_checkpoint_root_is_made_absolute_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert load("checkpoint.root=data/../ckpt").checkpoint_root == tmp_path.resolve() / "ckpt"


def test_home_in_checkpoint_root_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load("checkpoint.root=~/ckpt").checkpoint_root == tmp_path.resolve() / "ckpt"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("eager", "eager"),
        ("compatible", "compatible"),
        ("sessioned", "compatible"),
        ("EAGER", "eager"),
    ],
)
def test_connect_protocol_names(given: str, expected: str) -> None:
    assert load(f"connect.protocol={given}").connect_protocol == expected


def test_bootstrap_servers_are_normalised_into_a_list() -> None:
    config = load("bootstrap.servers= a.example:9092 , [::1]:9093,,b_1:9094, ")
    assert config.bootstrap_servers == "a.example:9092,[::1]:9093,b_1:9094"
    assert config.bootstrap_list == ["a.example:9092", "[::1]:9093", "b_1:9094"]


# --- Spark passthrough -------------------------------------------------------------------


def test_spark_keys_from_every_source_reach_spark_conf(tmp_path: Path) -> None:
    path = write(tmp_path, "spark.sql.adaptive.coalescePartitions.enabled=false\n")
    env = {"SPARKHERD_SPARK_EXECUTOR_MEMORY": "2g", "SPARKHERD_SPARK_MASTER": "spark://m:7077"}
    config = load_worker_config(path, env, ["spark.sql.shuffle.partitions=8"])
    assert config.spark_conf == {
        "spark.master": "spark://m:7077",
        "spark.executor.memory": "2g",
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.sql.shuffle.partitions": "8",
    }


def test_env_spark_keys_are_lower_cased_so_camel_case_needs_file_or_set() -> None:
    env = {"SPARKHERD_SPARK_SQL_ADAPTIVE_COALESCEPARTITIONS_ENABLED": "false"}
    assert "spark.sql.adaptive.coalescepartitions.enabled" in load(env=env).spark_conf


# --- Kafka Connect compatibility ---------------------------------------------------------


CONNECT_DISTRIBUTED = """\
bootstrap.servers=localhost:9092
group.id=connect-cluster
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.topic=connect-offsets
offset.storage.replication.factor=1
config.storage.topic=connect-configs
config.storage.replication.factor=1
status.storage.topic=connect-status
status.storage.replication.factor=1
offset.flush.interval.ms=10000
listeners=HTTP://:8083
plugin.path=/usr/share/java
"""


def test_a_kafka_connect_worker_file_loads_with_unused_keys_reported(tmp_path: Path) -> None:
    config = load_worker_config(write(tmp_path, CONNECT_DISTRIBUTED), {}, [])
    assert config.group_id == "connect-cluster"
    assert config.offset_storage_topic == "connect-offsets"
    assert (config.rest_host_name, config.rest_port) == ("0.0.0.0", 8083)
    assert config.rest_scheme == "http"
    assert config.ignored_keys == [
        "config.storage.replication.factor",
        "offset.flush.interval.ms",
        "offset.storage.replication.factor",
        "plugin.path",
        "status.storage.replication.factor",
    ]
    assert config.converter_settings == {
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
    }, "the worker's converters: the default of every connector that names none"


def test_a_worker_converter_that_cannot_work_stops_the_worker_naming_the_key() -> None:
    assert config_error("value.converter.schemas.enable=maybe") == (
        "invalid config: 'value.converter.schemas.enable': invalid value 'maybe': "
        "'true' or 'false' (from --set)"
    )


def test_keys_outside_the_compat_allow_list_still_fail() -> None:
    assert (
        config_error("producer.acks=all")
        == "invalid config: unknown key 'producer.acks' (from --set)"
    )


# --- invalid configuration ---------------------------------------------------------------


def test_unknown_key_names_the_key_its_source_and_a_close_match() -> None:
    assert config_error("bootstarp.servers=h:1") == (
        "invalid config: unknown key 'bootstarp.servers' "
        "(from --set; did you mean 'bootstrap.servers'?)"
    )


def test_unknown_key_from_env_names_the_variable() -> None:
    message = config_error(env={"SPARKHERD_LOG_LEVEL": "debug"})
    assert (
        message
        == "invalid config: unknown key 'log.level' (from environment variable SPARKHERD_LOG_LEVEL)"
    )


def test_unknown_key_from_file_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "rest.prot=1\n")
    with pytest.raises(ConfigError, match=f"unknown key 'rest.prot' \\(from {path};"):
        load_worker_config(path, {}, [])


def test_non_integer_port() -> None:
    assert config_error("rest.port=abc") == (
        "invalid config: 'rest.port' must be an integer between 1 and 65535 (got 'abc') "
        "(from --set)"
    )


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("rest.port=8083.0", "'rest.port' must be an integer between 1 and 65535 (got '8083.0')"),
        ("rest.port=0", "'rest.port' must be an integer between 1 and 65535 (got '0')"),
        (
            "rest.advertised.port=65536",
            "'rest.advertised.port' must be an integer between 1 and 65535",
        ),
        (
            "scheduled.rebalance.max.delay.ms=-1",
            "'scheduled.rebalance.max.delay.ms' must be an integer between 0 and",
        ),
        (
            "session.timeout.ms=2147483648",
            "'session.timeout.ms' must be an integer between 1 and 2147483647",
        ),
        (
            "task.shutdown.graceful.timeout.ms=soon",
            "'task.shutdown.graceful.timeout.ms' must be an integer",
        ),
        (
            "connect.protocol=fast",
            "'connect.protocol' must be one of 'eager', 'compatible' or 'sessioned' (got 'fast')",
        ),
        ("group.id=", "'group.id' must be a non-empty string (got '')"),
        ("config.storage.topic=a/b", "'config.storage.topic' must be a Kafka topic name"),
        ("group.instance.id=pod 1", "'group.instance.id' must be empty or 1 to 249 letters"),
        (
            "rest.host.name=bad host",
            "'rest.host.name' must be a host name or IP address (got 'bad host')",
        ),
        (
            "checkpoint.root=s3a://bucket/ckpt",
            "'checkpoint.root' must be a local directory path, not a URI",
        ),
        ("spark.master=", "'spark.master' must be a Spark master URL"),
    ],
)
def test_invalid_values_name_the_key(override: str, expected: str) -> None:
    assert config_error(override).startswith(f"invalid config: {expected}")


@pytest.mark.parametrize(
    "servers",
    [
        "",
        ",",
        "broker",
        "broker:",
        ":9092",
        "broker:0",
        "broker:65536",
        "a:1;b:2",
        "h:1:2",
        "[zz]:1",
        "[]:1",
        "-h:1",
    ],
)
def test_bad_bootstrap_format(servers: str) -> None:
    message = config_error(f"bootstrap.servers={servers}")
    assert message.startswith(
        "invalid config: 'bootstrap.servers' must be a comma-separated list of host:port pairs"
    )


def test_heartbeat_must_be_shorter_than_session_timeout() -> None:
    assert config_error("session.timeout.ms=3000") == (
        "invalid config: 'heartbeat.interval.ms' must be less than 'session.timeout.ms' "
        "(got 3000 >= 3000)"
    )


def test_derived_value_errors_say_what_they_derive_from() -> None:
    assert config_error("group.id=my group").endswith(
        "(got 'my group-configs') (derived from 'group.id')"
    )


def test_storage_topics_must_differ() -> None:
    assert config_error("offset.storage.topic=sparkherd-status") == (
        "invalid config: 'offset.storage.topic' must differ from 'status.storage.topic' "
        "(both are 'sparkherd-status') (from --set)"
    )


@pytest.mark.parametrize("override", ["foo", "=value", " = "])
def test_malformed_set_flag_is_named(override: str) -> None:
    assert (
        config_error(override)
        == f"invalid config: malformed --set '{override}': expected key=value"
    )


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read config file .*No such file"):
        load_worker_config(tmp_path / "absent.properties", {}, [])


def test_file_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a=1\nb=\\uXYZW\n")
    with pytest.raises(ConfigError, match=r"line 2: malformed \\uXXXX"):
        load_worker_config(path, {}, [])


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.properties"
    path.write_bytes(b"group.id=caf\xe9\n")
    with pytest.raises(ConfigError, match="is not UTF-8"):
        load_worker_config(path, {}, [])


@pytest.mark.parametrize(
    "values",
    [
        {"rest.host.name": 5},
        {"spark.executor.memory": 2},
        {"rest.port": True},
        {"checkpoint.root": 3},
    ],
)
def test_construction_never_leaks_validation_error(values: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        WorkerConfig.from_mapping(values)
    with pytest.raises(ConfigError):
        WorkerConfig(**values)


# --- the model itself --------------------------------------------------------------------


def test_config_is_frozen() -> None:
    config = load()
    with pytest.raises(ValidationError):
        config.rest_port = 1


def test_with_overrides_accepts_snake_and_dotted_names_and_derives_again() -> None:
    base = load("group.id=one", "rest.port=9000")
    changed = base.with_overrides(group_id="two", **{"rest.advertised.port": 80})
    assert (changed.group_id, changed.config_storage_topic) == ("two", "two-configs")
    assert (changed.rest_port, changed.rest_advertised_port) == (9000, 80)
    assert base.config_storage_topic == "one-configs"


def test_with_overrides_validates() -> None:
    with pytest.raises(ConfigError, match=r"'rest\.port' must be an integer"):
        load().with_overrides(rest_port=0)


def test_rest_auth_credentials_stay_out_of_the_config_repr() -> None:
    env = {"SPARKHERD_REST_AUTH_CREDENTIALS": "alice:s3cret"}
    config = load("rest.auth=basic", env=env)
    assert config.rest_auth == "basic"
    assert "s3cret" not in repr(config)


def test_listeners_set_the_rest_address_and_scheme() -> None:
    config = load("rest.port=9999", "listeners=https://127.0.0.2:8443")
    assert (config.rest_host_name, config.rest_port) == ("127.0.0.2", 8443)
    assert config.rest_url == "https://127.0.0.2:8443"


def test_a_listener_without_a_host_listens_everywhere() -> None:
    config = load("listeners=http://:8084")
    assert (config.rest_host_name, config.rest_port, config.rest_scheme) == (
        "0.0.0.0",
        8084,
        "http",
    )
    assert config.rest_advertised_host_name == socket.gethostname()


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        (["listeners=ftp://127.0.0.1:21"], "listeners"),
        (["listeners=http://a:1,http://b:2"], "listeners"),
    ],
)
def test_listener_mistakes_name_the_key(settings: list[str], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(*settings)
    assert raised.value.key == key


@pytest.mark.parametrize("bound", ["0", "-1", "lots", "2147483648", ""])
def test_the_sql_size_bound_is_a_positive_java_int(bound: str) -> None:
    message = config_error(f"spark.sparkherd.sql.maxGeneratedElements={bound}")
    assert "spark.sparkherd.sql.maxGeneratedElements" in message


def test_the_sql_size_bound_reaches_spark_as_any_spark_key() -> None:
    config = load("spark.sparkherd.sql.maxGeneratedElements=5000")
    assert config.spark_conf["spark.sparkherd.sql.maxGeneratedElements"] == "5000"


def test_topic_creation_is_enabled_unless_a_worker_says_false() -> None:
    assert load().topic_creation_enable is True
    assert load("topic.creation.enable=false").topic_creation_enable is False
    assert config_error("topic.creation.enable=sometimes") == (
        "invalid config: 'topic.creation.enable' must be 'true' or 'false' "
        "(got 'sometimes') (from --set)"
    )
