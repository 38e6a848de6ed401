"""Connector configs as the REST API shows them: a secret's value hidden.

Kafka Connect shows a PASSWORD setting's literal value to anyone who may GET the
connector; here every answer that carries a config (the connector, its config, its task
configs) shows `[hidden]` instead. A placeholder (`${file:...}`) is shown as it is: it
says where the secret lives, not what it is. So that a config read by GET can be edited
and PUT back, a secret given as `[hidden]` keeps the value the connector has.
"""

from __future__ import annotations

from collections.abc import Mapping

from worker.config.providers import PLACEHOLDER
from worker.plugins.api import HIDDEN, sounds_secret


class HiddenSecretError(ValueError):
    """A secret given as `[hidden]` where no value is stored to keep."""


def is_secret(key: str, secrets: frozenset[str]) -> bool:
    """`secrets` are the plugin's PASSWORD keys; Kafka's own (`*password`,
    `*sasl.jaas.config`) are secrets under any plugin or none."""
    return key in secrets or sounds_secret(key)


def shown_config(config: Mapping[str, str], secrets: frozenset[str]) -> dict[str, str]:
    return {
        key: HIDDEN if is_secret(key, secrets) and not _only_placeholder(value) else value
        for key, value in config.items()
    }


def kept_secrets(
    given: Mapping[str, str], stored: Mapping[str, str], secrets: frozenset[str]
) -> dict[str, str]:
    """`given` with each secret shown as `[hidden]` given back its stored value."""
    kept = dict(given)
    for key, value in given.items():
        if value != HIDDEN or not is_secret(key, secrets):
            continue
        if key not in stored:
            raise HiddenSecretError(
                f"{key} is {HIDDEN}, what GET shows in place of a secret, and the "
                "connector has no value of it to keep: give the secret itself or a "
                "placeholder such as ${file:/path:key}"
            )
        kept[key] = stored[key]
    return kept


def _only_placeholder(value: str) -> bool:
    return PLACEHOLDER.fullmatch(value.strip()) is not None
