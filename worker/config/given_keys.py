"""The keys a worker is given, sorted before the model sees them.

Only the model's own keys are fields; `spark.*`, config providers, Kafka client security
and converters are open-ended families kept as maps, the JVM packages' keys one map read
from their table, Kafka Connect keys sparkherd has no
use for are dropped, and anything else is refused here, with the closest known key.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping

from worker.config.defaults import DEFAULT_SPARK_MASTER, with_derived_defaults
from worker.config.errors import invalid
from worker.config.providers import is_provider_key
from worker.kafka.security import is_security_key
from worker.plugins.config_values import JAVA_INT_MAX
from worker.plugins.jvm_packages import JVM_CHOICES, JVM_PACKAGE_KEYS, JvmChoice, default_choices
from worker.records.converters.spec import is_converter_key
from worker.records.sql_plan import DEFAULT_MAX_GENERATED, MAX_GENERATED_KEY

CONNECT_COMPAT_IGNORED_KEYS = frozenset(
    {
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

SPARK_PREFIX = "spark."


def sorted_input(data: Mapping[str, object], fields: Collection[str]) -> dict[str, object]:
    """Split off `spark.*`, provider, security, converter and ignored keys, then derive
    defaults."""
    values: dict[str, object] = {}
    spark_conf = {"spark.master": DEFAULT_SPARK_MASTER}
    provider_settings: dict[str, str] = {}
    security: dict[str, str] = {}
    converters: dict[str, str] = {}
    jvm_packages = default_choices()
    for key, raw in data.items():
        value = raw.strip() if isinstance(raw, str) else raw
        if key in fields:
            values[key] = value
        elif key in JVM_PACKAGE_KEYS:
            jvm_packages[key] = _jvm_choice(key, value)
        elif (
            (key.startswith(SPARK_PREFIX) and len(key) > len(SPARK_PREFIX))
            or is_provider_key(key)
            or is_security_key(key)
            or is_converter_key(key)
        ):
            if not isinstance(value, str):
                raise invalid(f"'{key}' must be a string (got {value!r})", key)
            if is_provider_key(key):
                provider_settings[key] = value
            elif is_converter_key(key):
                converters[key] = value
            elif is_security_key(key):
                security[key] = value
            else:
                spark_conf[key] = value
        elif key not in CONNECT_COMPAT_IGNORED_KEYS:
            raise invalid(f"unknown key '{key}'", key, _did_you_mean(key, fields))
    if not spark_conf["spark.master"]:
        raise invalid(
            "'spark.master' must be a Spark master URL such as local[*] (got '')", "spark.master"
        )
    bound = spark_conf.get(MAX_GENERATED_KEY, str(DEFAULT_MAX_GENERATED))
    if not bound.isdecimal() or not 0 < int(bound) <= JAVA_INT_MAX:
        raise invalid(
            f"'{MAX_GENERATED_KEY}' must be a whole number from 1 to {JAVA_INT_MAX} "
            f"(got {bound!r})",
            MAX_GENERATED_KEY,
        )
    return {
        **with_derived_defaults(values),
        "spark_conf": spark_conf,
        "config_provider_settings": provider_settings,
        "kafka_security_settings": security,
        "converter_settings": converters,
        "jvm_packages": jvm_packages,
    }


def _jvm_choice(key: str, value: object) -> JvmChoice:
    for choice in JVM_CHOICES:
        if value == choice:
            return choice
    accepted = JVM_PACKAGE_KEYS[key].accepted
    raise invalid(f"'{key}' must be {accepted} (got {value!r})", key)


def _did_you_mean(key: str, fields: Collection[str]) -> list[str]:
    known = [*fields, *JVM_PACKAGE_KEYS, "spark.master"]
    return [f"did you mean '{match}'?" for match in difflib.get_close_matches(key, known, n=1)]
