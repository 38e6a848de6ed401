"""Kafka Connect's config providers: `${provider:[path:]key}` placeholders in connector
configs (KIP-297), resolved from files, directories (KIP-632) or the environment.

A connector config is stored on the config topic and shown by every GET, so a password
written into it is readable by anyone who can read either. With a placeholder the stored
config keeps the reference and only the task that needs the value resolves it. None is
enabled unless the worker configures it, and `allowed.paths` (KIP-993) or an allow-list
of variables bound what a REST caller can make the worker read. Connect's class names
select the built-ins; no other class is ever loaded.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from worker.config.properties import PropertiesSyntaxError, parse_properties

WORKER_KEY_PREFIX: Final = "config.providers"
PLACEHOLDER: Final = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
"""Kafka Connect's `ConfigTransformer` pattern: provider, optional path, key."""
_CONNECT_PACKAGE: Final = "org.apache.kafka.common.config.provider."
WORKER_VARIABLE_PREFIX: Final = "SPARKHERD_"
"""Environment variables that are the worker's own settings (its Kafka login, its REST
credentials among them): never a connector's to read through the `env` provider."""


class ConfigProviderError(ValueError):
    """A provider setting or a placeholder that cannot be used; never carries a value."""


class _Provider(Protocol):
    def get(self, path: str, key: str) -> str: ...


def _allowed_paths(alias: str, params: Mapping[str, str]) -> tuple[Path, ...] | None:
    """`allowed.paths`, resolved; None when unset (then every path is allowed, as in Connect)."""
    text = params.get("allowed.paths")
    if text is None:
        return None
    paths = [item.strip() for item in text.split(",") if item.strip()]
    relative = [p for p in paths if not Path(p).is_absolute()]
    if relative:
        raise ConfigProviderError(
            f"config.providers.{alias}.param.allowed.paths must list absolute directories "
            f"(got {relative[0]!r})"
        )
    return tuple(Path(p).resolve() for p in paths)


def _readable(path: str, allowed: tuple[Path, ...] | None) -> Path:
    """`path` resolved (symlinks and `..` followed), if it lies under an allowed directory.
    With `allowed.paths` a path must be absolute, as Connect's `AllowedPaths` has it: a
    relative one would depend on the worker's working directory."""
    if not path:
        raise ConfigProviderError("a path is required")
    if "\0" in path:
        raise ConfigProviderError("a path cannot hold a NUL character")
    if allowed is not None and not Path(path).is_absolute():
        raise ConfigProviderError(
            f"path {path!r} is not absolute, as this provider's allowed.paths requires"
        )
    resolved = Path(path).resolve()
    if allowed is not None and not any(resolved.is_relative_to(root) for root in allowed):
        raise ConfigProviderError(f"path {path!r} is not under this provider's allowed.paths")
    return resolved


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigProviderError(f"cannot read {str(path)!r}: {reason}") from None


@dataclass(frozen=True)
class _FileProvider:
    """A key of a properties file (Connect's FileConfigProvider)."""

    allowed: tuple[Path, ...] | None

    def get(self, path: str, key: str) -> str:
        source = _readable(path, self.allowed)
        try:
            entries = parse_properties(_read_text(source))
        except PropertiesSyntaxError as exc:
            raise ConfigProviderError(f"{path!r} is not a properties file: {exc}") from None
        if key not in entries:
            raise ConfigProviderError(f"{path!r} has no key {key!r}")
        return entries[key]


@dataclass(frozen=True)
class _DirectoryProvider:
    """The content of the file named `key` in a directory (Connect's
    DirectoryConfigProvider), as Kubernetes mounts a Secret."""

    allowed: tuple[Path, ...] | None

    def get(self, path: str, key: str) -> str:
        directory = _readable(path, self.allowed)
        if not key or key in (".", "..") or "/" in key or "\\" in key:
            raise ConfigProviderError(f"{key!r} is not a file name in {path!r}")
        target = directory / key
        if "\0" in key or not target.is_file():
            raise ConfigProviderError(f"{path!r} has no file {key!r}")
        return _read_text(_readable(str(target), self.allowed))


@dataclass(frozen=True)
class _EnvProvider:
    """An environment variable (Connect's EnvVarConfigProvider); no path. The worker's own
    `SPARKHERD_*` settings are out of reach even without an allow-list."""

    env: Mapping[str, str]
    allowlist: re.Pattern[str] | None

    def get(self, path: str, key: str) -> str:
        if path:
            raise ConfigProviderError(f"the env provider takes no path (got {path!r})")
        if key.startswith(WORKER_VARIABLE_PREFIX):
            raise ConfigProviderError(
                f"variable {key!r} is a setting of the worker, not for connectors"
            )
        if self.allowlist is not None and not self.allowlist.fullmatch(key):
            raise ConfigProviderError(f"variable {key!r} is not in this provider's allowlist")
        if key not in self.env:
            raise ConfigProviderError(f"variable {key!r} is not set")
        return self.env[key]


_KINDS: Final = {
    "file": "file",
    "directory": "directory",
    "env": "env",
    f"{_CONNECT_PACKAGE}FileConfigProvider": "file",
    f"{_CONNECT_PACKAGE}DirectoryConfigProvider": "directory",
    f"{_CONNECT_PACKAGE}EnvVarConfigProvider": "env",
}


def _provider(
    alias: str, kind: str, params: Mapping[str, str], env: Mapping[str, str]
) -> _Provider:
    if kind == "env":
        pattern = params.get("allowlist.pattern")
        try:
            allowlist = None if pattern is None else re.compile(pattern)
        except re.error as exc:
            raise ConfigProviderError(
                f"config.providers.{alias}.param.allowlist.pattern is not a regular "
                f"expression: {exc}"
            ) from None
        return _EnvProvider(env, allowlist)
    allowed = _allowed_paths(alias, params)
    return _FileProvider(allowed) if kind == "file" else _DirectoryProvider(allowed)


def is_provider_key(key: str) -> bool:
    return key == WORKER_KEY_PREFIX or key.startswith(f"{WORKER_KEY_PREFIX}.")


def has_placeholder(value: str) -> bool:
    return PLACEHOLDER.search(value) is not None


def hide(text: str, secrets: Mapping[str, str]) -> str:
    """`text` with every occurrence of a secret (`secrets`: value to placeholder) shown as
    its placeholder: in any letter case (a check may have upper-cased it), as `repr`
    escapes it, and with surrounding whitespace stripped (a file's trailing newline);
    longest first, so no part of a secret survives a shorter one's replacement."""
    forms: dict[str, str] = {}
    for value, placeholder in secrets.items():
        for form in (value, repr(value)[1:-1], value.strip()):
            if form:
                forms.setdefault(form.lower(), placeholder)
    if not forms:
        return text
    pattern = "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))
    return re.sub(pattern, lambda found: forms[found.group(0).lower()], text, flags=re.IGNORECASE)


@dataclass(frozen=True)
class ConfigProviders:
    """The providers a worker configured, by alias."""

    providers: Mapping[str, _Provider] = field(default_factory=dict)

    @classmethod
    def from_worker_settings(
        cls, settings: Mapping[str, str], env: Mapping[str, str]
    ) -> ConfigProviders:
        """From `config.providers` and `config.providers.<alias>.class|param.<name>`."""
        aliases = [a.strip() for a in settings.get(WORKER_KEY_PREFIX, "").split(",") if a.strip()]
        classes: dict[str, str] = {}
        params: dict[str, dict[str, str]] = {alias: {} for alias in aliases}
        for key, value in settings.items():
            if key == WORKER_KEY_PREFIX:
                continue
            rest = key[len(WORKER_KEY_PREFIX) + 1 :]
            alias, _, setting = rest.partition(".")
            if alias not in aliases:
                raise ConfigProviderError(
                    f"{key} configures provider {alias!r}, which config.providers does not list"
                )
            if setting == "class":
                classes[alias] = value.strip()
            elif setting.startswith("param.") and len(setting) > len("param."):
                params[alias][setting[len("param.") :]] = value
            else:
                raise ConfigProviderError(
                    f"unknown key {key} (a provider takes .class and .param.<name>)"
                )
        providers: dict[str, _Provider] = {}
        for alias in aliases:
            if alias not in classes:
                raise ConfigProviderError(f"config.providers.{alias}.class is required")
            kind = _KINDS.get(classes[alias])
            if kind is None:
                raise ConfigProviderError(
                    f"config.providers.{alias}.class {classes[alias]!r} is not a known "
                    f"provider; use one of {', '.join(_KINDS)}"
                )
            providers[alias] = _provider(alias, kind, params[alias], env)
        return cls(providers)

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """`config` with every placeholder replaced; files are read now, so a rotated
        secret is seen by the next resolution. Errors name the setting and the
        placeholder, never a value."""
        return {key: self._resolve_value(key, value) for key, value in config.items()}

    def secrets(self, config: Mapping[str, str]) -> dict[str, str]:
        """What each placeholder of `config` resolves to, mapped to the placeholder: the
        values `hide` must keep out of anything a user reads. One that does not resolve
        has no value to hide."""
        found: dict[str, str] = {}
        for key, value in config.items():
            for match in PLACEHOLDER.finditer(value):
                with contextlib.suppress(ConfigProviderError):
                    found.setdefault(self._resolve_value(key, match.group(0)), match.group(0))
        found.pop("", None)
        return found

    def _resolve_value(self, key: str, value: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            alias, path, name = match.group(1), match.group(3) or "", match.group(4)
            provider = self.providers.get(alias)
            try:
                if provider is None:
                    configured = ", ".join(sorted(self.providers)) or "none"
                    raise ConfigProviderError(
                        f"no config provider {alias!r} (configured: {configured})"
                    )
                return provider.get(path, name)
            except ConfigProviderError as exc:
                raise ConfigProviderError(
                    f"{key}: cannot resolve {match.group(0)}: {exc}"
                ) from None

        return PLACEHOLDER.sub(substitute, value)
