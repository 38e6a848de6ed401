"""Where a worker's config comes from: a properties file, `SPARKHERD_*` variables, `--set`.

Each value keeps its origin, so an error about it can say which of the three to fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from worker.config.errors import ConfigError
from worker.config.model import WorkerConfig
from worker.config.properties import PropertiesSyntaxError, parse_properties
from worker.config.providers import WORKER_VARIABLE_PREFIX

ENV_PREFIX: Final = WORKER_VARIABLE_PREFIX


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
    return WorkerConfig.from_mapping(values, origins)


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
