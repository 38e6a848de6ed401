"""How large one connector config may be: its number of keys, the size of each key and value.

A config is checked, stored on the config topic, replayed by every worker and shown by
every GET, and the leader handles writes one at a time: a config of 60,000 keys held
every other write behind it for 13 s. No connector needs anything near these bounds,
so a config beyond them is refused before it is queued, with a message saying which
bound it broke.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

MAX_CONFIG_KEYS: Final = 1_000
"""More settings than any plugin declares, with room for a pipeline's own keys."""
MAX_CONFIG_TEXT_BYTES: Final = 64 * 1024
"""Per key and per value, in UTF-8: a SQL query or a PEM certificate fits; a request
body could otherwise pack most of a megabyte into one setting."""


class ConfigTooLarge(ValueError):
    """A config beyond the bounds; the message names the bound, never a value."""


def check_config_bounds(config: Mapping[str, object]) -> None:
    """Raises `ConfigTooLarge` unless `config` keeps the bounds.

    Only strings are measured: a JSON number or boolean becomes a short text (Python
    parses no integer longer than 4,300 digits).
    """
    if len(config) > MAX_CONFIG_KEYS:
        raise ConfigTooLarge(
            f"a connector config may have at most {MAX_CONFIG_KEYS} keys (got {len(config)})"
        )
    for key, value in config.items():
        key_bytes = len(key.encode("utf-8"))
        if key_bytes > MAX_CONFIG_TEXT_BYTES:
            raise ConfigTooLarge(
                f"a config key may be at most {MAX_CONFIG_TEXT_BYTES} bytes in UTF-8 "
                f"(got one of {key_bytes})"
            )
        if isinstance(value, str):
            value_bytes = len(value.encode("utf-8"))
            if value_bytes > MAX_CONFIG_TEXT_BYTES:
                raise ConfigTooLarge(
                    f"the value of {key!r} may be at most {MAX_CONFIG_TEXT_BYTES} bytes in "
                    f"UTF-8 (got {value_bytes})"
                )
