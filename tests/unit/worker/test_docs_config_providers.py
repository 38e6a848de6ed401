"""The manual's config-provider example (docs/security.md), as written, starts a worker and
resolves its `env` placeholder: a user copies it verbatim, and the one it replaced stopped
the worker."""

from __future__ import annotations

import json
import re
from pathlib import Path

from worker.config.providers import PLACEHOLDER, ConfigProviders
from worker.config.sources import load_worker_config

SECURITY_PAGE = Path(__file__).resolve().parents[3] / "docs" / "security.md"


def example_blocks() -> tuple[str, str]:
    """The page's worker properties for the providers, and the connector config right
    after them, from its section on config providers."""
    page = SECURITY_PAGE.read_text(encoding="utf-8")
    security = page.split("\n## Secrets through config providers\n", 1)[1]
    blocks = re.findall(r"```(\w+)\n(.*?)```", security, flags=re.DOTALL)
    index = next(
        i
        for i, (kind, text) in enumerate(blocks)
        if kind == "properties" and "config.providers=" in text
    )
    (properties_kind, properties), (config_kind, config) = blocks[index : index + 2]
    assert (properties_kind, config_kind) == ("properties", "json")
    return properties, config


def test_the_env_provider_example_starts_a_worker_and_resolves(tmp_path: Path) -> None:
    properties, config_text = example_blocks()
    config = json.loads(config_text)
    from_env = {
        key: match.group(4)
        for key, value in config.items()
        for match in PLACEHOLDER.finditer(value)
        if match.group(1) == "env"
    }
    assert from_env, "the example shows no env placeholder"
    environment = {variable: f"/data/{variable.lower()}" for variable in from_env.values()}
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text(properties, encoding="utf-8")

    worker = load_worker_config(worker_file, environment, [])

    providers = ConfigProviders.from_worker_settings(worker.config_provider_settings, environment)
    resolved = providers.resolve({key: config[key] for key in from_env})
    assert resolved == {key: environment[variable] for key, variable in from_env.items()}
