"""The worker configuration: Kafka Connect's key names, validated once at start-up.

A worker that starts with a mistyped key or a bad value would misbehave much later and far
from the cause, so every problem is one `ConfigError` line naming the key before anything
starts. The package's parts: `sources` (file, environment, `--set`), `model`
(`WorkerConfig`, the keys and their relations), `values` (what one value may be),
`given_keys` (how given keys are sorted before the model sees them), `defaults`
(including those derived from other keys) and `errors`.
"""

from worker.config.errors import ConfigError
from worker.config.given_keys import CONNECT_COMPAT_IGNORED_KEYS
from worker.config.model import WorkerConfig
from worker.config.sources import ENV_PREFIX, load_worker_config

__all__ = [
    "CONNECT_COMPAT_IGNORED_KEYS",
    "ENV_PREFIX",
    "ConfigError",
    "WorkerConfig",
    "load_worker_config",
]
